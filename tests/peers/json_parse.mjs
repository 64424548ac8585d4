// JavaScript's JSON.parse on each line of stdin, printed back with JSON.stringify: what
// Foxglove (a JavaScript app) makes of a JSON message. An integer beyond 2^53 comes back
// rounded, so a caller comparing the output with its own exact reading finds it.
//   node json_parse.mjs < messages.jsonl
import readline from "node:readline";

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (line.length) process.stdout.write(JSON.stringify(JSON.parse(line)) + "\n");
}
