// How the Foxglove app decodes a channel's messages, shared by foxglove_client.mjs (our
// live server) and mcap_decode.mjs (our MCAP exports): ROS 2 CDR with @foxglove/rosmsg's
// ROS 2 grammar and @foxglove/rosmsg2-serialization, ROS 1 with @foxglove/rosmsg and
// @foxglove/rosmsg-serialization, protobuf with protobufjs from the FileDescriptorSet,
// JSON with JSON.parse. `replacer` prints BigInts as decimal strings and byte arrays as
// {"$bytes": length, "sha256": hex}.
import crypto from "node:crypto";

import rosmsg from "@foxglove/rosmsg";
import rosmsg2Serialization from "@foxglove/rosmsg2-serialization";
import rosmsgSerialization from "@foxglove/rosmsg-serialization";
import protobuf from "protobufjs";
import descriptor from "protobufjs/ext/descriptor/index.js";

const parseMessageDefinition = rosmsg.parse;
const Ros2Reader = rosmsg2Serialization.MessageReader;
const Ros1Reader = rosmsgSerialization.MessageReader;

export function replacer(_key, value) {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Uint8Array || value instanceof Int8Array) return bytes(value);
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) return Array.from(value);
  return value;
}

export function bytes(view) {
  const buf = Buffer.from(view.buffer, view.byteOffset, view.byteLength);
  return { $bytes: buf.length, sha256: crypto.createHash("sha256").update(buf).digest("hex") };
}

// channel: {encoding, schemaEncoding, schema, schemaName}; schema is the WebSocket
// protocol's text (base64 for protobuf) or an MCAP schema record's bytes.
export function decoderFor(channel, { rawJson = false } = {}) {
  const { encoding, schemaEncoding, schemaName } = channel;
  const schemaBytes =
    typeof channel.schema === "string"
      ? Buffer.from(channel.schema, encoding === "protobuf" ? "base64" : "utf8")
      : Buffer.from(channel.schema);
  const schema = schemaBytes.toString("utf8");
  if (encoding === "cdr" && schemaEncoding === "ros2msg") {
    const reader = new Ros2Reader(parseMessageDefinition(schema, { ros2: true }));
    return (data) => {
      const value = reader.readMessage(data);
      if (reader.lastReadHadTrailingBytes()) throw new Error("trailing bytes after the message");
      return value;
    };
  }
  if (encoding === "ros1" && schemaEncoding === "ros1msg") {
    const reader = new Ros1Reader(parseMessageDefinition(schema));
    return (data) => reader.readMessage(data);
  }
  if (encoding === "protobuf") {
    const set = descriptor.FileDescriptorSet.decode(schemaBytes);
    const type = protobuf.Root.fromDescriptor(set).lookupType(schemaName);
    return (data) => {
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      return type.toObject(type.decode(bytes), { longs: String, enums: String, defaults: true });
    };
  }
  if (encoding === "json") {
    const text = new TextDecoder();
    return (data) => {
      const raw = text.decode(data);
      return rawJson ? { parsed: JSON.parse(raw), raw } : JSON.parse(raw);
    };
  }
  throw new Error(`no decoder for ${encoding} / ${schemaEncoding}`);
}

