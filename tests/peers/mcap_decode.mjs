// Our MCAP exports as the Foxglove app reads them: @mcap/core's indexed reader (with
// Foxglove's zstd/lz4 decompressors) finds every message, and each is decoded with its
// channel's schema by Foxglove's own decoders (foxglove_decode.mjs).
//   node mcap_decode.mjs FILE
// Prints JSON lines: {"topic", "schema", "encoding", "log_time", "value"} or, where the
// decoders refuse the message or its schema, "error" in place of "value".
import fs from "node:fs/promises";

import { McapIndexedReader } from "@mcap/core";
import { FileHandleReadable } from "@mcap/nodejs";
import lz4pkg from "@foxglove/wasm-lz4";
import zstd from "@foxglove/wasm-zstd";

import { decoderFor, replacer } from "./foxglove_decode.mjs";

const lz4 = lz4pkg.decompress ?? lz4pkg;
await zstd.isLoaded;
await lz4pkg.isLoaded;
const decompressHandlers = {
  zstd: (buf, size) => zstd.decompress(buf, Number(size)),
  lz4: (buf, size) => lz4(buf, Number(size)),
};

const handle = await fs.open(process.argv[2], "r");
try {
  const reader = await McapIndexedReader.Initialize({
    readable: new FileHandleReadable(handle),
    decompressHandlers,
  });
  const decoders = new Map();
  for (const channel of reader.channelsById.values()) {
    const schema = reader.schemasById.get(channel.schemaId);
    try {
      decoders.set(
        channel.id,
        decoderFor({
          encoding: channel.messageEncoding,
          schemaEncoding: schema?.encoding ?? "",
          schema: schema?.data ?? new Uint8Array(),
          schemaName: schema?.name ?? "",
        }),
      );
    } catch (err) {
      decoders.set(channel.id, err);
    }
  }
  for await (const message of reader.readMessages()) {
    const channel = reader.channelsById.get(message.channelId);
    const decode = decoders.get(channel.id);
    const record = {
      topic: channel.topic,
      schema: reader.schemasById.get(channel.schemaId)?.name ?? "",
      encoding: channel.messageEncoding,
      log_time: message.logTime,
    };
    try {
      if (decode instanceof Error) throw decode;
      record.value = decode(message.data);
    } catch (err) {
      record.error = String(err?.message ?? err);
    }
    process.stdout.write(JSON.stringify(record, replacer) + "\n");
  }
} finally {
  await handle.close();
}
