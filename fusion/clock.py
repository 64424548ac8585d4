"""Clock models: map a sensor's own timestamps onto the reference clock.

A model sees pairs ``(t_sensor, t_arrival)`` through :meth:`ClockModel.observe`
and answers :meth:`ClockModel.align`. Models are sans-I/O: no sleeping, no
reading the time; the hub feeds them. One model instance serves one sensor.

:class:`OnlineClock` learns the map from the data (see its docstring and
:mod:`fusion._clock_envelope` for the estimator); :class:`Identity` and
:class:`FixedOffset` are for sensors already synchronised or calibrated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from fusion._clock_envelope import Fit, LowerEnvelope
from fusion.errors import ConfigError

MS = 1_000_000
S = 1_000_000_000


@runtime_checkable
class ClockModel(Protocol):
    """Maps sensor time to reference time (both int ns)."""

    def observe(self, t_sensor: int, t_arrival: int) -> None:
        """Learn from one frame's sensor stamp and host arrival time."""
        ...

    def align(self, t_sensor: int) -> int:
        """The reference-clock instant of sensor time ``t_sensor``."""
        ...

    def describe(self) -> dict[str, Any]:
        """Current estimate, for metrics (JSON-safe)."""
        ...


class Identity:
    """Sensor time already is reference time (hardware-synchronised sensors, PTP)."""

    def observe(self, t_sensor: int, t_arrival: int) -> None:
        pass

    def align(self, t_sensor: int) -> int:
        return t_sensor

    def describe(self) -> dict[str, Any]:
        return {"model": "Identity"}

    def __repr__(self) -> str:
        return "Identity()"


class FixedOffset:
    """Reference time = sensor time + a calibrated constant ``offset_ns``."""

    def __init__(self, offset_ns: int) -> None:
        self.offset_ns = int(offset_ns)

    def observe(self, t_sensor: int, t_arrival: int) -> None:
        pass

    def align(self, t_sensor: int) -> int:
        return t_sensor + self.offset_ns

    def describe(self) -> dict[str, Any]:
        return {"model": "FixedOffset", "offset_ns": self.offset_ns}

    def __repr__(self) -> str:
        return f"FixedOffset({self.offset_ns})"


class _Track:
    """One unbroken stretch of a sensor clock: unwrapping state and the delay envelope."""

    __slots__ = ("env", "fit", "last_raw", "last_x", "prior", "wrap")

    def __init__(
        self, t_sensor: int, t_arrival: int, env: LowerEnvelope, prior: float, wrap: int | None
    ) -> None:
        self.env = env
        self.wrap = wrap
        self.prior = prior
        self.last_raw = t_sensor
        self.last_x = t_sensor
        env.add(t_sensor, t_arrival - t_sensor)
        self.fit = Fit(t_sensor, t_arrival - t_sensor, prior)

    def unwrap(self, t_sensor: int) -> int:
        """``t_sensor`` on this track's continuous axis (the nearest turn of the counter)."""
        step = t_sensor - self.last_raw
        wrap = self.wrap
        if wrap is not None:
            step %= wrap
            if step >= wrap >> 1:
                step -= wrap
        return self.last_x + step

    def add(self, t_sensor: int, x: int, y: int) -> None:
        self.env.add(x, y)
        self.last_raw = t_sensor
        self.last_x = x


class OnlineClock:
    """Learns sensor time -> reference time from ``(t_sensor, t_arrival)`` pairs (contract).

    The model is ``t = t_sensor + offset(t_sensor) + extra_offset_ns`` with an
    affine ``offset`` fitted to the *lower envelope* of ``t_arrival - t_sensor``
    over the last ``window_ns`` of sensor time (at most ``max_points`` samples),
    as TICSync does: the frames that crossed the link fastest define it, a
    congested frame cannot pull it. So ``align`` answers the capture time plus
    the *minimum* transport delay, a constant no one-way method can observe;
    ``extra_offset_ns`` is where a calibrated correction for it (or for a
    camera's exposure midpoint) goes.

    * **Start-up.** The first sample gives the offset. Until the window spans
      ``settle_ns`` the skew is held at its prior (0, or the previous estimate
      after a reset), because a slope from a few close samples extrapolates
      badly; after that it is free within ``±max_skew_ppm``.
    * **Jumps.** A sample whose sensor time goes back by more than
      ``jump_threshold_ns``, or that lies that far *below* the settled
      envelope (a negative delay: the clock jumped forward), starts a
      candidate model; ``confirm_samples`` consecutive such samples confirm
      the jump and the candidate replaces the model (``resets`` counts it). A
      lone glitch is discarded (``rejected``). Samples lying ``jump_threshold_ns`` *above* the
      envelope for ``confirm_ns`` of sensor time (a small backward jump, or a
      link that got slower for good) also reset the model, onto them.
      A stamp going back by less than the threshold is ignored (``ignored``).
    * **Restarts.** A source that knows its stream restarted (a video sender
      whose timestamps jumped, see :mod:`fusion._continuity`) marks the first
      frame ``meta["segment_start"]``; the hub then calls :meth:`restart`, and
      the model starts over at once instead of waiting for confirmations.
    * **Wrap-around.** With ``wrap_period_ns`` (an adapter declares it in
      ``SensorSpec.meta["wrap_period_ns"]``, e.g. Velodyne's hour) sensor time
      is unwrapped to the nearest turn of the counter.

    Everything is int ns; only the skew is a float, and ``align`` rounds once,
    so equal inputs give equal outputs. ``observe`` + ``align`` cost a few
    microseconds (``benchmarks/bench_clock.py``).
    """

    def __init__(
        self,
        *,
        window_ns: int = 20 * S,
        max_points: int = 4096,
        jump_threshold_ns: int = 20 * MS,
        confirm_samples: int = 3,
        confirm_ns: int = 500 * MS,
        settle_ns: int = 1 * S,
        max_skew_ppm: float = 2000.0,
        wrap_period_ns: int | None = None,
        extra_offset_ns: int = 0,
    ) -> None:
        if jump_threshold_ns <= 0:
            raise ConfigError(f"jump_threshold_ns must be > 0, got {jump_threshold_ns}")
        if confirm_samples < 1:
            raise ConfigError(f"confirm_samples must be >= 1, got {confirm_samples}")
        if not 0 <= max_skew_ppm < 1e6:
            raise ConfigError(f"max_skew_ppm must be in [0, 1e6), got {max_skew_ppm}")
        if wrap_period_ns is not None and wrap_period_ns <= 2 * jump_threshold_ns:
            raise ConfigError(
                f"wrap_period_ns must exceed twice jump_threshold_ns, got {wrap_period_ns}"
            )
        LowerEnvelope(window_ns, max_points)  # validates both
        self.window_ns = int(window_ns)
        self.max_points = int(max_points)
        self.jump_threshold_ns = int(jump_threshold_ns)
        self.confirm_samples = int(confirm_samples)
        self.confirm_ns = int(confirm_ns)
        self.settle_ns = int(settle_ns)
        self.max_skew_ppm = float(max_skew_ppm)
        self.wrap_period_ns = None if wrap_period_ns is None else int(wrap_period_ns)
        self.extra_offset_ns = int(extra_offset_ns)
        # A clock running fast by s has d(offset)/d(t_sensor) = 1/(1+s) - 1.
        s = max_skew_ppm * 1e-6
        self._slope_lo = 1 / (1 + s) - 1
        self._slope_hi = 1 / (1 - s) - 1 if s < 1 else math.inf
        self._main: _Track | None = None
        self._candidate: _Track | None = None
        self._above_since: int | None = None
        self._prior = 0.0  # skew prior (d offset / d t_sensor) of the next model
        self.observed = 0
        """Samples given to :meth:`observe`."""
        self.resets = 0
        """Times a clock jump or reset was detected and the model re-initialised."""
        self.rejected = 0
        """Samples that broke the model but were not confirmed (glitches)."""
        self.ignored = 0
        """Samples whose sensor time went back by less than the jump threshold."""

    @classmethod
    def for_spec(cls, meta: Mapping[str, Any], **kwargs: Any) -> OnlineClock:
        """A model for a sensor whose spec ``meta`` may declare ``wrap_period_ns``."""
        if "wrap_period_ns" in meta and "wrap_period_ns" not in kwargs:
            kwargs["wrap_period_ns"] = int(meta["wrap_period_ns"])
        return cls(**kwargs)

    # -- the model ----------------------------------------------------------------------

    def observe(self, t_sensor: int, t_arrival: int) -> None:
        """Learn from one frame: its sensor stamp and its host arrival time (int ns)."""
        self.observed += 1
        track = self._main
        if track is None:
            self._main = self._new_track(t_sensor, t_arrival, self._prior)
            return
        x = track.unwrap(t_sensor)
        threshold = self.jump_threshold_ns
        if x <= track.last_x:
            if x > track.last_x - threshold:
                self.ignored += 1
            else:
                self._on_break(t_sensor, t_arrival)
            return
        y = t_arrival - x
        residual = y - track.fit.at(x)
        if residual < -threshold and track.env.span >= self.settle_ns:
            # Before settling, a much lower delay only means the first ones were slow.
            self._on_break(t_sensor, t_arrival)
            return
        if self._candidate is not None:
            self.rejected += len(self._candidate.env)
            self._candidate = None
        track.add(t_sensor, x, y)
        if residual > threshold:
            if self._above_since is None:
                self._above_since = x
            elif x - self._above_since >= self.confirm_ns:
                # Every sample for confirm_ns sits well above: the envelope moved up.
                track.env.drop_before(self._above_since)
                track.prior = track.fit.slope
                self._above_since = None
                self.resets += 1
        else:
            self._above_since = None
        self._refit(track)

    def align(self, t_sensor: int) -> int:
        """The reference-clock time of sensor time ``t_sensor`` (int ns, deterministic).

        A frame that just broke the model (a suspected jump) is aligned by the
        candidate model that starts at it.
        """
        cand = self._candidate
        track = cand if cand is not None and t_sensor == cand.last_raw else self._main
        if track is None:
            return t_sensor + self.extra_offset_ns
        x = track.unwrap(t_sensor)
        return x + track.fit.at(x) + self.extra_offset_ns

    def reset(self) -> None:
        """Forget everything learned (the counters stay)."""
        self._main = self._candidate = None
        self._above_since = None
        self._prior = 0.0

    def restart(self) -> None:
        """The sensor's stream restarted: the next sample starts a new model (counted
        in ``resets``), with the old skew as its prior (the hardware is the same)."""
        main = self._main
        if main is None:
            return
        self._prior = main.fit.slope
        self._main = self._candidate = None
        self._above_since = None
        self.resets += 1

    # -- the estimate -------------------------------------------------------------------

    @property
    def offset_ns(self) -> int | None:
        """Reference minus sensor time at the newest sample, without ``extra_offset_ns``."""
        track = self._main
        return None if track is None else track.fit.at(track.last_x)

    @property
    def skew_ppm(self) -> float | None:
        """How fast the sensor clock runs against the reference, parts per million."""
        track = self._main
        return None if track is None else (1 / (1 + track.fit.slope) - 1) * 1e6

    @property
    def uncertainty_ns(self) -> int | None:
        """A scale (not a bound) of the error of ``align`` at the newest sample.

        From the window's residual spread: with ``n`` samples whose delays
        spread by ``m`` (the median residual), the envelope lies about ``m / n``
        above the fastest possible delay; the skew error grows that with the
        distance from the window's middle. The constant is chosen so that in
        simulation (``tests/fusion/test_clock_online.py``) about 95 % of
        errors are within it once settled. Before ``settle_ns`` the skew is only
        a prior, so the full ``max_skew_ppm`` over the span is added. O(window).
        """
        track = self._main
        if track is None:
            return None
        env, fit = track.env, track.fit
        points = env.points()
        residuals = sorted(y - fit.at(x) for x, y in points)
        spread = residuals[len(residuals) // 2] / math.log(2)
        n = len(points)
        span = env.span
        floor = 6 * spread / n
        if span < self.settle_ns:
            return math.ceil(floor + spread / n + self.max_skew_ppm * 1e-6 * span)
        mean_x = sum(x for x, _ in points) / n
        return math.ceil(floor * (1 + 2 * abs(track.last_x - mean_x) / span))

    def describe(self) -> dict[str, Any]:
        """The current estimate and counters (JSON-safe; the hub's per-sensor ``clock``)."""
        track = self._main
        skew = self.skew_ppm
        return {
            "model": "OnlineClock",
            "offset_ns": self.offset_ns,
            "skew_ppm": None if skew is None else round(skew, 3),
            "uncertainty_ns": self.uncertainty_ns,
            "samples": 0 if track is None else len(track.env),
            "span_ns": 0 if track is None else track.env.span,
            "settled": track is not None and track.env.span >= self.settle_ns,
            "observed": self.observed,
            "resets": self.resets,
            "rejected": self.rejected,
            "ignored": self.ignored,
            "extra_offset_ns": self.extra_offset_ns,
            "wrap_period_ns": self.wrap_period_ns,
        }

    def __repr__(self) -> str:
        return (
            f"OnlineClock(offset_ns={self.offset_ns}, skew_ppm={self.skew_ppm}, "
            f"resets={self.resets})"
        )

    # -- internals ----------------------------------------------------------------------

    def _new_track(self, t_sensor: int, t_arrival: int, prior: float) -> _Track:
        env = LowerEnvelope(self.window_ns, self.max_points)
        return _Track(t_sensor, t_arrival, env, prior, self.wrap_period_ns)

    def _refit(self, track: _Track) -> None:
        if track.env.span < self.settle_ns:
            track.fit = track.env.fit(track.prior, track.prior)
        else:
            track.fit = track.env.fit(self._slope_lo, self._slope_hi)

    def _on_break(self, t_sensor: int, t_arrival: int) -> None:
        """A sample inconsistent with the model: a glitch, or the first sign of a jump."""
        main = self._main
        assert main is not None
        cand = self._candidate
        if cand is not None:
            x = cand.unwrap(t_sensor)
            if x > cand.last_x:
                cand.add(t_sensor, x, t_arrival - x)
                self._refit(cand)
                if len(cand.env) >= self.confirm_samples:
                    self._main, self._candidate = cand, None
                    self._above_since = None
                    self.resets += 1
                return
            self.rejected += len(cand.env)
        # The hardware is the same after a reboot: start from the old skew.
        self._candidate = self._new_track(t_sensor, t_arrival, main.fit.slope)
        if self.confirm_samples == 1:
            self._main, self._candidate = self._candidate, None
            self._above_since = None
            self.resets += 1
