# kmux - a plain GNU Makefile, as redis and git use.
#
#   make                  build/libkmux.so and build/kmux
#   make test             unit + end-to-end tests on the simulated driver,
#                         then the unit tests again under ASan/UBSan
#   make demo             `kmux trace` on a bundled example (real GPU if any)
#   make prof             build/prof/libkmux.so: the preload with every function
#                         probed (selfprof.c), for finding where its host time goes
#   make install PREFIX=/usr/local
#   make SAN=1 ...        build into build-san/ with AddressSanitizer + UBSan
#
# The CUDA toolkit supplies headers only (types); libkmux.so dlopens
# libcuda.so.1 at run time and links libc, libdl and libpthread alone.

CUDA_HOME ?= /usr/local/cuda
PREFIX ?= /usr/local
CC ?= cc
NVCC ?= $(CUDA_HOME)/bin/nvcc
PYTHON ?= python3

ifeq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
$(error kmux: cannot find $(CUDA_HOME)/include/cuda.h: install the CUDA toolkit headers (the CUDA toolkit, or Debian non-free nvidia-cuda-dev with CUDA_HOME=/usr) or set CUDA_HOME)
endif

ifeq ($(SAN),1)
BUILD ?= build-san
SANFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD ?= build
SANFLAGS =
endif

WERROR ?= -Werror
OPT ?= -O2
CFLAGS ?= $(OPT) -g
KMUX_CFLAGS = -std=gnu11 -Wall -Wextra $(WERROR) -fPIC $(SANFLAGS) $(CFLAGS)
KMUX_CPPFLAGS = -D_GNU_SOURCE -Iinclude -iquote src -iquote src/common -iquote src/preload \
		-I$(CUDA_HOME)/include $(CPPFLAGS)
KMUX_LDFLAGS = $(SANFLAGS) $(LDFLAGS)

COMPILE = $(CC) $(KMUX_CPPFLAGS) $(KMUX_CFLAGS) -MMD -MP

# --- libkmux.so: the preload ------------------------------------------------
# Only the libc-only parts of src/common may go in here.  PRELOAD_CFLAGS: how
# its objects are compiled (unit tests of preload modules use them too).
PRELOAD_CFLAGS = -fvisibility=hidden -DKMUX_PRELOAD
PRELOAD_COMMON = src/common/log.c src/common/paths.c src/common/proto.c \
		 src/common/size.c src/common/sock.c
PRELOAD_SRCS = $(sort $(wildcard src/preload/*.c)) $(PRELOAD_COMMON)
PRELOAD_OBJS = $(PRELOAD_SRCS:%.c=$(BUILD)/obj/preload/%.o)

# --- kmux: the CLI, and kmuxd inside it --------------------------------------
# One binary, as tmux: `kmux daemon` is the daemon (src/daemon/), started by
# hand, by systemd (contrib/kmuxd.service) or by the first `kmux submit`.
CLI_SRCS = $(sort $(wildcard src/cli/*.c) $(wildcard src/common/*.c) \
		  $(wildcard src/daemon/*.c))
CLI_OBJS = $(CLI_SRCS:%.c=$(BUILD)/obj/cli/%.o)
CLI_LIBS = -lcjson -lpthread -levent -lsqlite3 -lncurses -ldl

all: $(BUILD)/libkmux.so $(BUILD)/kmux

$(BUILD)/obj/preload/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) $(PRELOAD_CFLAGS) $(PRELOAD_FILE_FLAGS) -c $< -o $@

# The sanitizer runtime resolves its interceptors through dlsym -- kmux's --
# before its shadow memory exists, so the dlsym path must not be instrumented.
ifneq ($(SANFLAGS),)
$(BUILD)/obj/preload/src/preload/dlsym.o $(BUILD)/obj/preload/src/preload/real.o: \
	PRELOAD_FILE_FLAGS = -fno-sanitize=all
endif

$(BUILD)/obj/cli/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@

$(BUILD)/libkmux.so: $(PRELOAD_OBJS) src/preload/exports.map
	$(CC) -shared -o $@ $(PRELOAD_OBJS) $(KMUX_LDFLAGS) \
		-Wl,--version-script=src/preload/exports.map \
		$(if $(SANFLAGS),,-Wl,-z,defs) -ldl -lpthread

# The profiling build (selfprof.c): the same preload with every function
# probed, for hosts without perf.  Not installed; bench/gpu uses it.
PROF_OBJS = $(PRELOAD_SRCS:%.c=$(BUILD)/prof/obj/%.o)
PROF_CFLAGS = -DKMUX_SELFPROF -finstrument-functions \
	      -finstrument-functions-exclude-file-list=.h

$(BUILD)/prof/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) $(PRELOAD_CFLAGS) $(PROF_CFLAGS) -c $< -o $@

$(BUILD)/prof/libkmux.so: $(PROF_OBJS) src/preload/exports.map
	$(CC) -shared -o $@ $(PROF_OBJS) $(KMUX_LDFLAGS) \
		-Wl,--version-script=src/preload/exports.map -Wl,-z,defs \
		-ldl -lpthread

ifeq ($(SANFLAGS),)
prof: $(BUILD)/prof/libkmux.so
else
prof:
	@echo "kmux: make prof: not with SAN=1 (the sanitizers' runtime calls kmux's dlsym before a probe may run)" >&2; exit 2
endif

$(BUILD)/kmux: $(CLI_OBJS)
	$(CC) -o $@ $(CLI_OBJS) $(KMUX_LDFLAGS) $(CLI_LIBS)

# --- fragments: simulated driver, tests, benchmarks ------------------------
# Each owns its targets and adds to TEST_TARGETS / UNIT_TESTS / E2E_TESTS;
# the unit tests' rules are made below from what tests/unit/*.mk set.
TEST_TARGETS =
UNIT_TESTS =
-include $(sort $(wildcard tests/simcuda/*.mk))
-include $(sort $(wildcard tests/unit/*.mk))
-include $(sort $(wildcard tests/e2e/*.mk))
-include contrib/slurm/slurm.mk

# --- unit tests: one rule for all of them -----------------------------------
# Each tests/unit/X.mk names a test T (UNIT_TESTS += T) and sets
#   T_SRCS        its sources, compiled into objects of its own under
#                 $(BUILD)/obj/unit/T/ so that no other rule's flags apply
#   T_CFLAGS      extra compile flags (e.g. $(PRELOAD_CFLAGS): as in libkmux.so)
#   T_LIBS        link libraries
# and, only where needed:
#   T_GROUPS      instead of T_SRCS/T_CFLAGS: source groups G compiled with
#                 flags of their own, T_G_SRCS with T_G_CFLAGS into
#                 $(BUILD)/obj/unit/T/G/
#   T_EXTRA_OBJS  objects built elsewhere, linked after the test's own
#   T_DEPS        other prerequisites of the binary (not linked)

# $(call unit_objs,T,PREFIX,DIR): compile $(PREFIX_SRCS) with $(PREFIX_CFLAGS)
# into DIR, and add the objects to T_OBJS.
define unit_objs
$(1)_OBJS += $$($(2)_SRCS:%.c=$(3)/%.o)
$$($(2)_SRCS:%.c=$(3)/%.o): $(3)/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(COMPILE) $$($(2)_CFLAGS) -c $$< -o $$@
endef

# $(call unit_test_rules,T): the objects and the binary $(BUILD)/tests/unit/T.
define unit_test_rules
$(if $($(1)_GROUPS),,$(eval $(call unit_objs,$(1),$(1),$(BUILD)/obj/unit/$(1))))
$(foreach g,$($(1)_GROUPS),$(eval $(call unit_objs,$(1),$(1)_$(g),$(BUILD)/obj/unit/$(1)/$(g))))
$(BUILD)/tests/unit/$(1): $$($(1)_OBJS) $$($(1)_EXTRA_OBJS) $$($(1)_DEPS)
	@mkdir -p $$(dir $$@)
	$$(CC) -o $$@ $$($(1)_OBJS) $$($(1)_EXTRA_OBJS) $$(KMUX_LDFLAGS) $$($(1)_LIBS)
endef

$(foreach t,$(UNIT_TESTS),$(eval $(call unit_test_rules,$(t))))

UNIT_BINS = $(UNIT_TESTS:%=$(BUILD)/tests/unit/%)

$(BUILD)/tests/unit/%: | $(BUILD)/tests/unit
$(BUILD)/tests/unit:
	@mkdir -p $@

check-hooks:
	@$(PYTHON) scripts/check-hooks.py

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; \
		TEST_SIMCUDA=$(CURDIR)/$(BUILD)/simcuda/libcuda.so.1 $$t; done

e2e: all $(TEST_TARGETS)
	@BUILD=$(BUILD) bash tests/e2e/run.sh

# Every parser of outside bytes has a libFuzzer target; `make test` runs
# each briefly (FUZZ_SECONDS), longer runs by hand (see tests/fuzz/*.sh).
# trace-line is built by tests/fuzz/build.sh and run here; each NAME in
# FUZZ_SCRIPTS is built and run by tests/fuzz/build-NAME.sh -t SECONDS.
FUZZ_SECONDS ?= 15
FUZZ_SCRIPTS = proto bench-job ptx verify-log
fuzz:
	@mkdir -p build/fuzz/corpus-trace-line
	@sh tests/fuzz/build.sh >/dev/null
	@build/fuzz/fuzz-trace-line -dict=tests/fuzz/trace-line.dict \
		-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=build/fuzz/ build/fuzz/corpus-trace-line \
		tests/fuzz/corpus >build/fuzz/trace-line.log 2>&1 || \
		{ tail -n 30 build/fuzz/trace-line.log; exit 1; }
	@echo "fuzz: trace-line: $$(grep -m1 'stat::number_of_executed_units' build/fuzz/trace-line.log | awk '{print $$2}') inputs in $(FUZZ_SECONDS) s, no findings"
	@for f in $(FUZZ_SCRIPTS); do \
		bash tests/fuzz/build-$$f.sh -t $(FUZZ_SECONDS) >build/fuzz/$$f.log 2>&1 || \
			{ tail -n 30 build/fuzz/$$f.log; exit 1; }; \
		echo "fuzz: $$f: $$(grep -m1 'stat::number_of_executed_units' build/fuzz/$$f.log | awk '{print $$2}') inputs in $(FUZZ_SECONDS) s, no findings"; \
	done

test: check-hooks
	$(MAKE) all unit
	$(MAKE) e2e
	$(MAKE) SAN=1 unit e2e
	$(MAKE) fuzz

# The demo program links against the simulated driver's libcuda.so (same
# soname as the real one): at run time the system's libcuda.so.1 is used when
# there is one, the simulated one when scripts/demo.sh points there.
$(BUILD)/examples/demo: examples/demo.c examples/demo-kernels-ptx.h $(BUILD)/simcuda/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra $(WERROR) -O2 -g -I$(CUDA_HOME)/include \
		-o $@ $< -L$(BUILD)/simcuda -lcuda

demo: all $(TEST_TARGETS) $(BUILD)/examples/demo
	@BUILD=$(BUILD) bash scripts/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/kmux \
		$(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man7
	install -m 0755 $(BUILD)/kmux $(DESTDIR)$(PREFIX)/bin/kmux
	install -m 0755 $(BUILD)/libkmux.so $(DESTDIR)$(PREFIX)/lib/kmux/libkmux.so
	$(if $(wildcard include/kmux.h),install -m 0644 include/kmux.h $(DESTDIR)$(PREFIX)/include/kmux.h)
	install -m 0644 docs/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 docs/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	install -d $(DESTDIR)$(PREFIX)/lib/kmux/python/kmux
	install -m 0644 python/kmux/*.py $(DESTDIR)$(PREFIX)/lib/kmux/python/kmux/

clean:
	rm -rf build build-san

.PHONY: all prof check-hooks unit e2e fuzz test demo install clean

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
