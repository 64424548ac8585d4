"""A Foxglove WebSocket client for the tests, written from the protocol spec (ws-protocol
``docs/spec.md``), not from the server: serverInfo/advertise in, subscribe out, binary
message data (opcode 0x01: u32 subscription id, u64 log time, payload) in.

Payloads are decoded with the advertised schema only: protobuf by building the message
class from the channel's base64 ``FileDescriptorSet`` (the protobuf package), JSON as JSON,
ROS 2 CDR with rosbags from the ``ros2msg`` text.
"""

from __future__ import annotations

import base64
import json
import struct
import time
from dataclasses import dataclass, field
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

# foxglove-sdk 0.30 answers only its own name for the protocol; the Foxglove app offers both.
SUBPROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]
MESSAGE_DATA = 0x01
TIME = 0x02


@dataclass
class Received:
    topic: str
    log_time: int
    payload: bytes


@dataclass
class LiveClient:
    ws: ClientConnection
    channels: dict[int, dict[str, Any]] = field(default_factory=dict)
    subscriptions: dict[int, int] = field(default_factory=dict)
    """subscription id -> channel id"""
    server_info: dict[str, Any] = field(default_factory=dict)
    times: list[int] = field(default_factory=list)
    """Time messages (the ``time`` capability's server clock, ns), in arrival order."""

    def topics(self) -> dict[str, dict[str, Any]]:
        return {c["topic"]: c for c in self.channels.values()}

    def _control(self, text: str) -> None:
        message = json.loads(text)
        if message["op"] == "serverInfo":
            self.server_info = message
        elif message["op"] == "advertise":
            for channel in message["channels"]:
                self.channels[channel["id"]] = channel
        elif message["op"] == "unadvertise":
            for cid in message["channelIds"]:
                self.channels.pop(cid, None)

    async def wait_topics(self, topics: set[str]) -> None:
        deadline = time.monotonic() + 30
        while not topics <= set(self.topics()):
            if time.monotonic() > deadline:
                raise AssertionError(f"never advertised: {topics - set(self.topics())}")
            message = await self.ws.recv()
            if isinstance(message, str):
                self._control(message)

    async def subscribe(self, topics: set[str]) -> None:
        subs = []
        for cid, channel in self.channels.items():
            if channel["topic"] in topics:
                sid = len(self.subscriptions) + 1
                self.subscriptions[sid] = cid
                subs.append({"id": sid, "channelId": cid})
        await self.ws.send(json.dumps({"op": "subscribe", "subscriptions": subs}))

    async def receive(self) -> Received | None:
        """The next message data (``None`` for a control or time message, which is applied)."""
        message = await self.ws.recv()
        if isinstance(message, str):
            self._control(message)
            return None
        if message[0] == TIME:
            self.times.append(struct.unpack_from("<Q", message, 1)[0])
            return None
        assert message[0] == MESSAGE_DATA, f"unexpected binary opcode {message[0]}"
        sid, log_time = struct.unpack_from("<IQ", message, 1)
        channel = self.channels[self.subscriptions[sid]]
        return Received(channel["topic"], log_time, bytes(message[13:]))


def connect(url: str, **options: Any) -> Any:
    return websockets.connect(url, subprotocols=SUBPROTOCOLS, proxy=None, max_size=None, **options)  # type: ignore[arg-type]


class Decoder:
    """Decodes a channel's payloads with its advertised schema."""

    def __init__(self, channel: dict[str, Any]) -> None:
        self.channel = channel
        encoding = channel["encoding"]
        self._cls: Any = None
        self._store: Any = None
        if encoding == "protobuf":
            from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

            fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
            pool = descriptor_pool.DescriptorPool()
            for proto in fds.file:
                pool.Add(proto)
            self._cls = message_factory.GetMessageClass(
                pool.FindMessageTypeByName(channel["schemaName"])
            )
        elif encoding == "cdr":
            from rosbags.typesys import Stores, get_types_from_msg, get_typestore

            self._store = get_typestore(Stores.EMPTY)
            self._store.register(get_types_from_msg(channel["schema"], channel["schemaName"]))
        elif encoding != "json":
            raise AssertionError(f"unknown encoding {encoding}")

    def __call__(self, payload: bytes) -> Any:
        if self._cls is not None:
            return self._cls.FromString(payload)
        if self._store is not None:
            return self._store.deserialize_cdr(payload, self.channel["schemaName"])
        return json.loads(payload)
