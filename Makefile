# Two entry points: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
STAMP_TEST := $(VENV)/.installed-test

.PHONY: demo test lint typecheck bench examples clean system-deps test-system-deps

demo: $(STAMP)
	$(VENV)/bin/hyperframes demo

# Two passes (tests/conftest.py): two workers for the bulk, then the tests that time
# live rates, two at a time (they mostly wait on real time), a file per worker and
# files that share a machine-wide resource one after another. Bytecode is written
# even where PYTHONDONTWRITEBYTECODE is set: the suite starts hundreds of Python
# processes, and pytest's workers rewrite every test module's asserts, each time
# from source without it.
test: $(STAMP_TEST)
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q -n 2 --dist loadfile -m "not serial"
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q -n 2 --dist loadgroup -m serial
	$(MAKE) --no-print-directory lint typecheck
	$(VENV)/bin/hyperframes demo --quiet

lint: $(STAMP_TEST)
	$(VENV)/bin/ruff check fusion adapters recordings hyperframes tests benchmarks examples
	$(VENV)/bin/ruff format --check fusion adapters recordings hyperframes tests benchmarks examples

typecheck: $(STAMP_TEST)
	$(VENV)/bin/mypy

examples: $(STAMP_TEST)
	@for f in examples/*.py; do echo "== $$f"; $(PY) $$f > /dev/null || exit 1; done

bench: $(STAMP_TEST)
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# System packages, installed with apt-get when missing and possible; otherwise a clear
# message. `make demo` needs only libusb-1.0 (open3d loads it at import time) and ffmpeg;
# `make test` also needs editcap from wireshark-common (the pcapng tests convert real
# captures with it), python3-rosbag (the real ROS 1 rosbag API, run by /usr/bin/python3,
# reads our .bag exports back), Node.js and npm (the Node peers of tests/peers: @mcap/core,
# Foxglove's client library, the foxglove/mcap conformance generator), g++ and Fast DDS 2.9
# (libfastrtps-dev: the ROS 2 tests' Fast DDS node, tests/peers/fastdds), rtsp-server-perl
# (a real RTSP server the audio tests pull from: they start their own on free loopback
# ports, not the packaged service) and libasound2-data (ALSA's configuration, for the
# audio tests' capture through ALSA's file plugin).
define install_missing
	if [ -z "$$missing" ]; then exit 0; fi; \
	if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then SUDO=""; \
	elif command -v apt-get >/dev/null 2>&1 && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	else \
		echo "error: missing system packages:$$missing" >&2; \
		echo "       Debian/Ubuntu: 'sudo apt-get install$$missing'; Fedora: 'sudo dnf install libusb1 ffmpeg';" >&2; \
		echo "       macOS: 'brew install libusb ffmpeg node'. Then rerun make." >&2; \
		exit 1; \
	fi; \
	echo "Installing$$missing with apt-get..."; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$SUDO apt-get install -y -q $$missing >/dev/null 2>&1 || \
	{ $$SUDO apt-get update -q >/dev/null 2>&1 && $$SUDO apt-get install -y -q $$missing >/dev/null; } || \
	{ echo "error: could not install$$missing with apt-get; install it yourself, then rerun make." >&2; exit 1; }
endef

system-deps:
	@missing=""; \
	ldconfig -p 2>/dev/null | grep -q 'libusb-1.0.so.0' || missing="$$missing libusb-1.0-0"; \
	command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe >/dev/null 2>&1 || missing="$$missing ffmpeg"; \
	$(install_missing)

test-system-deps: system-deps
	@missing=""; \
	command -v editcap >/dev/null 2>&1 || missing="$$missing wireshark-common"; \
	[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import rosbag' >/dev/null 2>&1 || missing="$$missing python3-rosbag"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	command -v g++ >/dev/null 2>&1 || missing="$$missing g++"; \
	test -f /usr/include/fastdds/dds/domain/DomainParticipant.hpp || missing="$$missing libfastrtps-dev libfastcdr-dev"; \
	command -v rtsp-server-perl >/dev/null 2>&1 || missing="$$missing rtsp-server-perl"; \
	test -f /usr/share/alsa/alsa.conf || missing="$$missing libasound2-data"; \
	$(install_missing)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml $(VENV)/bin/python | system-deps
	$(PY) -m pip install -q -e .
	@touch $@

# The Node peers (tests/peers/package.json, locked): npm ci into tests/peers/node_modules.
NODE_PEERS := tests/peers/node_modules/.installed
$(NODE_PEERS): tests/peers/package.json tests/peers/package-lock.json | test-system-deps
	cd tests/peers && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(STAMP_TEST): pyproject.toml $(VENV)/bin/python $(NODE_PEERS) | test-system-deps
	$(PY) -m pip install -q -e '.[test,dev,bench,rerun,ray,ros2]'
	@# ouster-sdk: the Ouster tests' reference decoder and the OSF reader (OusterSource needs
	@# it for nothing else). It pins rosbags==0.9.23, psutil<6, click<8.1.8 and flask==3.0
	@# against ours, so it goes outside site-packages, where `pip check` does not see it and
	@# nothing imports it unasked; tests/conftest.py puts the folder on sys.path.
	$(PY) -m pip uninstall -q -y ouster-sdk 2>/dev/null || true
	$(PY) -m pip install -q --no-deps --upgrade --target $(VENV)/oracles/ouster 'ouster-sdk>=1.0.1,<1.1'
	@touch $@ $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
