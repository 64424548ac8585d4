// Read an MCAP file with @mcap/core, the TypeScript reference reader, and print
// what it found as one JSON document on stdout:
//   node mcap_read.mjs FILE indexed|streamed
// {"profile", "schemas": [{id, name, encoding, data_hex}], "channels": [{id, topic,
//  schema_id, message_encoding, metadata}], "messages": [{channel_id, topic, sequence,
//  log_time, publish_time, data_hex}], "attachments": [...], "metadata": [...]}
// Times are decimal strings (they pass 2^53). Messages: in log-time order (indexed)
// or file order (streamed). Chunks compressed with zstd or lz4 are decompressed with
// Foxglove's own WebAssembly decompressors, as the Foxglove app does.
import fs from "node:fs/promises";

import { McapIndexedReader, McapStreamReader } from "@mcap/core";
import { FileHandleReadable } from "@mcap/nodejs";
import lz4pkg from "@foxglove/wasm-lz4";
import zstd from "@foxglove/wasm-zstd";

const lz4 = lz4pkg.decompress ?? lz4pkg;

const [file, mode] = process.argv.slice(2);
await zstd.isLoaded;
await lz4pkg.isLoaded;
const decompressHandlers = {
  zstd: (buf, size) => zstd.decompress(buf, Number(size)),
  lz4: (buf, size) => lz4(buf, Number(size)),
};
const hex = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("hex");
const out = { profile: null, schemas: [], channels: [], messages: [], attachments: [], metadata: [] };
const topics = new Map();
const schema = (r) => ({ id: r.id, name: r.name, encoding: r.encoding, data_hex: hex(r.data) });
const channel = (r) => {
  topics.set(r.id, r.topic);
  return {
    id: r.id,
    topic: r.topic,
    schema_id: r.schemaId,
    message_encoding: r.messageEncoding,
    metadata: Object.fromEntries(r.metadata),
  };
};
const message = (r) => ({
  channel_id: r.channelId,
  topic: topics.get(r.channelId) ?? null,
  sequence: r.sequence,
  log_time: r.logTime.toString(),
  publish_time: r.publishTime.toString(),
  data_hex: hex(r.data),
});

if (mode === "indexed") {
  const handle = await fs.open(file, "r");
  try {
    const reader = await McapIndexedReader.Initialize({
      readable: new FileHandleReadable(handle),
      decompressHandlers,
    });
    out.profile = reader.header.profile;
    for (const r of reader.schemasById.values()) out.schemas.push(schema(r));
    for (const r of reader.channelsById.values()) out.channels.push(channel(r));
    for await (const r of reader.readMessages()) out.messages.push(message(r));
    for await (const r of reader.readAttachments()) out.attachments.push({ name: r.name, data_hex: hex(r.data) });
    for await (const r of reader.readMetadata()) out.metadata.push({ name: r.name, metadata: Object.fromEntries(r.metadata) });
  } finally {
    await handle.close();
  }
} else if (mode === "streamed") {
  const reader = new McapStreamReader({ decompressHandlers, validateCrcs: true });
  reader.append(await fs.readFile(file));
  const seenSchemas = new Set();
  const seenChannels = new Set();
  for (let r; (r = reader.nextRecord()); ) {
    if (r.type === "Header") out.profile = r.profile;
    else if (r.type === "Schema" && !seenSchemas.has(r.id)) {
      seenSchemas.add(r.id);
      out.schemas.push(schema(r));
    } else if (r.type === "Channel" && !seenChannels.has(r.id)) {
      seenChannels.add(r.id);
      out.channels.push(channel(r));
    } else if (r.type === "Message") out.messages.push(message(r));
    else if (r.type === "Attachment") out.attachments.push({ name: r.name, data_hex: hex(r.data) });
    else if (r.type === "Metadata") out.metadata.push({ name: r.name, metadata: Object.fromEntries(r.metadata) });
  }
  if (!reader.done()) throw new Error(`${file}: the stream reader did not reach the end magic`);
} else {
  throw new Error(`usage: node mcap_read.mjs FILE indexed|streamed (got ${mode})`);
}
process.stdout.write(JSON.stringify(out));
