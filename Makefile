# baton: build, test, demo, install.
#   make test       install what is needed, build, run every test, the timed
#                   radio's clock test (Tests/Radio/test_timing.py), fuzz-smoke
#                   and test-vm, then builds the .deb and runs it (test-deb.sh)
#                   and installs it with apt-get into a clean Debian 12 chroot
#                   (test-deb-install.sh; the root cached in Tests/Scripts/cache)
#   make test-vm    the kernel adapter path (hciN) in a VM with Debian's kernel
#   make fuzz       coverage-guided fuzzing (libFuzzer, AddressSanitizer) of every
#                   decoder of outside bytes, FUZZ_SECONDS each (default 60), then
#                   a hostile peer's sessions; prints executions, edges covered and
#                   crashes per target; not in 'make test'
#   make fuzz-smoke every fuzz target for FUZZ_SMOKE_SECONDS (default 3) on its
#                   seed corpus (Tests/Fuzz/corpus); fails on a crash
#   make sanitize   the test suite under ThreadSanitizer and under
#                   AddressSanitizer, each built into a scratch path of its own
#                   (.build/tsan, .build/asan), the agents the tests start
#                   included; prints time, tests and findings per sanitizer and
#                   fails on any (Tests/Scripts/sanitize.sh); not in 'make
#                   test': CI's time is used up
#   make demo       two agents on a simulated radio, handing notes to each other
#   make install    the release binary (Swift runtime linked statically,
#                   stripped), both man pages, the user unit, the bash
#                   completion and the example configuration (PREFIX, DESTDIR,
#                   BINDIR, MANDIR, UNITDIR, COMPLETIONDIR and DOCDIR honoured)
#   make deb        baton_VERSION_amd64.deb with Debian's tools (dpkg-shlibdeps,
#                   dpkg-gencontrol, dpkg-deb), checked by lintian
#                   (Tests/Scripts/deb.sh; debian/ holds its control files)
#   make uninstall  remove what 'make install' put there
# BUILD=debug installs the debug build instead; NOBUILD=1 installs whatever
# is already built without running swift build; BATON_BIN=PATH (with NOBUILD=1)
# installs that binary instead (the tests' BATON_BIN, as make sanitize sets it).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/user
DOCDIR ?= $(PREFIX)/share/doc/baton
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
SWIFT ?= swift
BUILD ?= release
# The Swift runtime linked into the binary, and no $ORIGIN run path (nothing
# is loaded from beside it).
RELEASE_FLAGS ?= --static-swift-stdlib --disable-local-rpath
INSTALL ?= install
BATON_BIN ?= .build/$(BUILD)/baton
# An import of a baton target that Package.swift does not declare a dependency
# is an error (a plain build accepts one that happens to be built already).
CHECK_FLAGS ?= --explicit-target-dependency-import-check error

.PHONY: all build release test fuzz fuzz-smoke sanitize setup demo install uninstall clean test-vm deb

all: build

setup:
	Tests/Scripts/setup.sh

build:
	Tests/Scripts/setup.sh --build
	$(SWIFT) build $(CHECK_FLAGS)

release:
	Tests/Scripts/setup.sh --build
	$(SWIFT) build -c release $(RELEASE_FLAGS)

test: setup
	$(SWIFT) build --build-tests $(CHECK_FLAGS)
	$(SWIFT) test --no-parallel
	.venv/bin/python3 -m unittest Tests/Radio/test_timing.py
	.venv/bin/python3 -m unittest Tests/Scripts/test_round_trips.py
	Tests/Scripts/test-demo-stop.sh
	$(MAKE) fuzz-smoke
	$(MAKE) test-vm
	Tests/Scripts/test-deb.sh
	Tests/Scripts/test-deb-install.sh baton_*.deb

demo:
	Tests/Scripts/demo.sh

FUZZ_SECONDS ?= 60
fuzz: setup
	FUZZ_SECONDS=$(FUZZ_SECONDS) Tests/Scripts/fuzz.sh

# The fuzz build has a scratch path of its own (.build/fuzz), so it does not
# disturb the plain build's; the smoke run uses a debug build, which builds in
# a third of a release build's time (see Tests/Scripts/fuzz.sh).
FUZZ_SMOKE_SECONDS ?= 3
fuzz-smoke:
	FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS) FUZZ_SESSIONS=0 FUZZ_CONFIG=debug Tests/Scripts/fuzz.sh

# Two more builds of the package and two runs of the suite, each several
# times the plain one's: outside CI's time (see Tests/Scripts/sanitize.sh).
sanitize: setup
	Tests/Scripts/sanitize.sh

install:
ifeq ($(NOBUILD),)
	$(SWIFT) build -c $(BUILD) --product baton $(if $(filter release,$(BUILD)),$(RELEASE_FLAGS))
endif
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(COMPLETIONDIR) $(DESTDIR)$(DOCDIR)
	$(INSTALL) -m 755 $(if $(filter release,$(BUILD)),-s) $(BATON_BIN) $(DESTDIR)$(BINDIR)/baton
	$(INSTALL) -m 644 Man/baton.1 $(DESTDIR)$(MANDIR)/man1/baton.1
	$(INSTALL) -m 644 Man/baton.conf.5 $(DESTDIR)$(MANDIR)/man5/baton.conf.5
	sed 's|/usr/local/bin/baton|$(BINDIR)/baton|' Config/baton.service \
		> $(DESTDIR)$(UNITDIR)/baton.service
	chmod 644 $(DESTDIR)$(UNITDIR)/baton.service
	$(INSTALL) -m 644 Config/baton.bash-completion $(DESTDIR)$(COMPLETIONDIR)/baton
	$(INSTALL) -m 644 Config/baton.conf $(DESTDIR)$(DOCDIR)/baton.conf
	@echo "installed; for the user service: systemctl --user daemon-reload && systemctl --user enable --now baton"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/baton $(DESTDIR)$(MANDIR)/man1/baton.1 \
		$(DESTDIR)$(MANDIR)/man5/baton.conf.5 $(DESTDIR)$(UNITDIR)/baton.service \
		$(DESTDIR)$(COMPLETIONDIR)/baton $(DESTDIR)$(DOCDIR)/baton.conf
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	rm -rf .build baton_*.deb

deb:
	Tests/Scripts/deb.sh

# The kernel adapter path (hciN, HCI user channel) inside a VM running Debian's
# kernel under qemu; installs qemu etc. itself, caches the kernel in Tests/VM/cache.
test-vm: setup
	$(SWIFT) build
	Tests/VM/run.sh
