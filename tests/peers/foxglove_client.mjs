// Foxglove's own client library against our live server: @foxglove/ws-protocol's
// FoxgloveClient (over the `ws` package), decoding every message as the Foxglove app
// does: ROS 2 CDR with @foxglove/rosmsg (ros2 grammar) + @foxglove/rosmsg2-serialization,
// ROS 1 with @foxglove/rosmsg + @foxglove/rosmsg-serialization, protobuf with protobufjs
// from the advertised FileDescriptorSet, JSON with JSON.parse.
//
//   node foxglove_client.mjs URL OPTIONS_JSON
//
// OPTIONS_JSON: {"subprotocols": [...], "subscribe_after_ms": 0, "idle_ms": 3000,
//   "timeout_ms": 30000, "commands": [{"at_ms": 500, "command": "pause"|"play",
//   "speed": 1.0, "seek": "NS" | "seek_offset": "NS after the serverInfo's dataStartTime"}],
//   "after_subscribe": false (true: the commands' at_ms count from the subscriptions to
//   the first advertised channels, sent before them on the same connection, so the server
//   has them when it plays; else from the connection's open),
//   "raw_json": false, "stay": false (do not end when the replay says it ended)}
// Prints JSON lines: {"kind": "open", "protocol"}, {"kind": "serverInfo", ...},
// {"kind": "advertise", "channels", "at_ms"}, {"kind": "message", "topic", "log_time",
// "schema", "value"} (or "error" where the library cannot decode it), {"kind": "time",
// "t"}, {"kind": "playbackState", ...}, {"kind": "sent", "request_id", ...},
// {"kind": "end", "why"}. Integers that JavaScript reads as BigInt print as decimal
// strings; byte arrays print as {"$bytes": length, "sha256": hex}.
import wsProtocol from "@foxglove/ws-protocol";
import WebSocket from "ws";

import { decoderFor, replacer } from "./foxglove_decode.mjs";

const { FoxgloveClient } = wsProtocol;

const [url, optionsText] = process.argv.slice(2);
const options = JSON.parse(optionsText ?? "{}");
const subprotocols = options.subprotocols ?? [FoxgloveClient.SUPPORTED_SUBPROTOCOL];
const started = Date.now();
const print = (record) => process.stdout.write(JSON.stringify(record, replacer) + "\n");

// The playback control request of foxglove-sdk's protocol (client binary opcode 3:
// command u8, speed f32, had_seek u8, seek u64, request id u32-length string; all LE).
function playbackRequest({ command, speed, seek }, requestId) {
  const id = Buffer.from(requestId, "utf8");
  const out = Buffer.alloc(1 + 1 + 4 + 1 + 8 + 4 + id.length);
  let o = out.writeUInt8(3, 0);
  o = out.writeUInt8(command === "pause" ? 1 : 0, o);
  o = out.writeFloatLE(speed ?? 1.0, o);
  o = out.writeUInt8(seek === undefined ? 0 : 1, o);
  o = out.writeBigUInt64LE(BigInt(seek ?? 0), o);
  o = out.writeUInt32LE(id.length, o);
  id.copy(out, o);
  return out;
}

function playbackState(view) {
  const buf = Buffer.from(view);
  const idLength = buf.readUInt32LE(15);
  return {
    kind: "playbackState",
    status: ["playing", "paused", "buffering", "ended"][buf.readUInt8(1)] ?? buf.readUInt8(1),
    current_time: buf.readBigUInt64LE(2).toString(),
    speed: buf.readFloatLE(10),
    did_seek: buf.readUInt8(14) !== 0,
    request_id: buf.subarray(19, 19 + idLength).toString("utf8"),
    at_ms: Date.now() - started,
  };
}

const ws = new WebSocket(url, subprotocols);
const client = new FoxgloveClient({ ws });
const channels = new Map();
const decoders = new Map();
const subscriptions = new Map();
let lastHeard = Date.now();
let subscribing = (options.subscribe_after_ms ?? 0) <= 0;

function subscribe(channel) {
  if (!subscribing || [...subscriptions.values()].includes(channel.id)) return;
  subscriptions.set(client.subscribe(channel.id), channel.id);
}

function end(why) {
  print({ kind: "end", why, at_ms: Date.now() - started });
  client.close();
  process.exit(0);
}

ws.on("upgrade", (response) =>
  print({ kind: "open", protocol: response.headers["sec-websocket-protocol"] ?? null }),
);
ws.on("unexpected-response", (_req, response) => {
  print({ kind: "refused", status: response.statusCode });
  process.exit(0);
});
ws.addEventListener("message", (event) => {
  lastHeard = Date.now();
  const data = event.data;
  if (typeof data !== "string" && new Uint8Array(data)[0] === 5) {
    const state = playbackState(new Uint8Array(data));
    print(state);
    // the replay reached its end: what it sent before has arrived (the server flushes
    // its last frames before it says so)
    if (state.status === "ended" && !state.request_id && !options.stay) setTimeout(() => end("ended"), 300);
  }
});
client.on("error", (err) => {
  if (!/opcode in binary message: 5$/.test(String(err?.message))) print({ kind: "clientError", error: String(err?.message ?? err) });
});
let dataStart = 0n;
client.on("serverInfo", (info) => {
  if (info.dataStartTime) dataStart = BigInt(info.dataStartTime.sec) * 1_000_000_000n + BigInt(info.dataStartTime.nsec);
  print({ kind: "serverInfo", ...info });
});
client.on("status", (status) => print({ kind: "status", ...status }));
client.on("time", ({ timestamp }) => print({ kind: "time", t: timestamp, at_ms: Date.now() - started }));
client.on("advertise", (list) => {
  print({ kind: "advertise", channels: list, at_ms: Date.now() - started });
  for (const channel of list) {
    channels.set(channel.id, channel);
    try {
      decoders.set(channel.id, decoderFor(channel, { rawJson: options.raw_json }));
    } catch (err) {
      decoders.set(channel.id, err);
    }
    subscribe(channel);
  }
  if (options.after_subscribe && subscribing && list.length) scheduleCommands();
});
client.on("message", ({ subscriptionId, timestamp, data }) => {
  const channel = channels.get(subscriptions.get(subscriptionId));
  const decode = decoders.get(channel.id);
  const record = { kind: "message", topic: channel.topic, schema: channel.schemaName, log_time: timestamp, at_ms: Date.now() - started };
  try {
    if (decode instanceof Error) throw decode;
    record.value = decode(data);
  } catch (err) {
    record.error = String(err?.message ?? err);
  }
  print(record);
});
client.on("close", () => end("closed by the server"));

// Playback commands, timed from the open or (after_subscribe) from the first subscriptions:
// a server reads a connection's messages in order, so a "play" then never reaches it before
// them (a timer from the open can, on a loaded machine: the first messages went nowhere).
let scheduled = false;
function scheduleCommands() {
  if (scheduled) return;
  scheduled = true;
  (options.commands ?? []).forEach((command, i) => {
    setTimeout(() => {
      const requestId = `request-${i}`;
      if (command.seek_offset !== undefined) command.seek = (dataStart + BigInt(command.seek_offset)).toString();
      ws.send(playbackRequest(command, requestId));
      print({ kind: "sent", request_id: requestId, ...command, at_ms: Date.now() - started });
    }, command.at_ms);
  });
}

ws.on("open", () => {
  if (!subscribing) {
    setTimeout(() => {
      subscribing = true;
      for (const channel of channels.values()) subscribe(channel);
    }, options.subscribe_after_ms);
  }
  if (!options.after_subscribe || !subscribing) scheduleCommands();
});

setInterval(() => {
  if (Date.now() - lastHeard > (options.idle_ms ?? 3000)) end("idle");
  if (Date.now() - started > (options.timeout_ms ?? 30000)) end("timeout");
}, 50);
