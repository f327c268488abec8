# Developer targets. CI runs scripts/test.sh (which includes the sanitizer step).
PYTHON ?= python3

.PHONY: test fuzz sanitize

# the Python suite with the small "ci" hypothesis profile and the default fuzz case counts
test:
	$(PYTHON) -m pytest -q

# the property tests and the file / crash fuzzers with many more cases (minutes, not seconds)
fuzz:
	HYPOTHESIS_PROFILE=fuzz PYGGMLR_FUZZ_CASES=20000 $(PYTHON) -m pytest -q tests/core/test_properties.py tests/core/test_properties_misuse.py tests/io/test_fuzz_files.py tests/hostile/test_crash.py

# the C core under ASan + LSan + UBSan: the C driver (tests/c), then the Python suite
sanitize:
	bash scripts/sanitize.sh
