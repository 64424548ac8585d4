"""Every reach into cyclonedds' internals, in one place (principle 12).

What is used, and why (cyclonedds' documented API is its entities, ``Qos``/``Policy``,
``IdlStruct`` and ``DataReader.take``/``DataWriter.write``):

* ``Entity.__del__()`` called directly (:func:`delete`): it deletes the DDS entity now and
  does nothing the second time (it checks ``_ref`` in ``_entities``); a participant, its
  domain and a wait set are left at once, not when the garbage collector gets to them;
* a policy object's ``__scope__`` (:func:`policy_scope`, ``"Reliability"``,
  ``"Userdata"``...): the only way to tell the kind of a policy in a discovered endpoint's
  QoS;
* what ``DataReader.take`` and ``DataWriter.write`` call on a sample class:
  ``cls.deserialize(data)`` with the serialised bytes and ``sample.serialize(use_version_2=...)``
  (:mod:`adapters.ros._idltypes` replaces both so samples carry raw CDR);
* ``DataWriter.wait_for_acks(timeout)`` raising ``AttributeError`` when the timeout passes
  (cyclonedds 11.0 reads an attribute its ``DDSException`` lacks): :func:`wait_for_acks`
  answers ``False`` then, as it documents.

Checked against cyclonedds :data:`CHECKED` (``tests/adapters/ros2/test_compat_cyclonedds.py``
exercises each on a loopback participant and fails, naming this module, on a release
outside that range).
"""

from __future__ import annotations

from typing import Any

DISTRIBUTION = "cyclonedds"
CHECKED = ">=11.0.1,<=11.0.1"
"""The releases this module was read against and its tests passed with (11.0.1 is the only
11.x on PyPI; 0.10's Python API differs)."""


def delete(entity: Any) -> None:
    """Delete a cyclonedds entity now (later calls, and its finaliser, do nothing)."""
    entity.__del__()


def policy_scope(policy: Any) -> str | None:
    """The kind of a QoS policy object (``"Reliability"``, ``"Userdata"``...), or ``None``."""
    scope = getattr(policy, "__scope__", None)
    return scope if isinstance(scope, str) else None


def wait_for_acks(writer: Any, timeout_ns: int) -> bool:
    """Whether every matched reliable reader acknowledged what ``writer`` (a ``DataWriter``)
    wrote, waiting at most ``timeout_ns``."""
    try:
        return bool(writer.wait_for_acks(timeout_ns))
    except AttributeError:  # 11.0 fails so on a timeout instead of returning False
        return False
