# Two entry points: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
STAMP_TEST := $(VENV)/.installed-test

.PHONY: demo test lint typecheck bench examples clean system-deps

demo: $(STAMP)
	$(VENV)/bin/hyperframes demo

test: $(STAMP_TEST)
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory lint typecheck
	$(VENV)/bin/hyperframes demo --quiet

lint: $(STAMP_TEST)
	$(VENV)/bin/ruff check fusion adapters recordings hyperframes tests benchmarks examples

typecheck: $(STAMP_TEST)
	$(VENV)/bin/mypy

examples: $(STAMP_TEST)
	@for f in examples/*.py; do echo "== $$f"; $(PY) $$f > /dev/null || exit 1; done

bench: $(STAMP_TEST)
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# open3d loads libusb-1.0 at import time.
system-deps:
	@if ldconfig -p 2>/dev/null | grep -q 'libusb-1.0.so.0'; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "Installing libusb-1.0 (needed by open3d) with apt-get..."; \
		apt-get install -y -q libusb-1.0-0 >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null 2>&1 && apt-get install -y -q libusb-1.0-0 >/dev/null; } || \
		{ echo "error: could not install libusb-1.0-0 with apt-get; install it yourself, then rerun make." >&2; exit 1; }; \
	elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
		sudo apt-get install -y -q libusb-1.0-0 >/dev/null; \
	else \
		echo "error: open3d needs the system library libusb-1.0, which is missing." >&2; \
		echo "       Install it (Debian/Ubuntu: 'sudo apt-get install libusb-1.0-0'," >&2; \
		echo "       Fedora: 'sudo dnf install libusb1', macOS: 'brew install libusb'), then rerun make." >&2; \
		exit 1; \
	fi

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml $(VENV)/bin/python | system-deps
	$(PY) -m pip install -q -e .
	@touch $@

$(STAMP_TEST): pyproject.toml $(VENV)/bin/python | system-deps
	$(PY) -m pip install -q -e '.[test,dev,bench,rerun,ray]'
	@touch $@ $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
