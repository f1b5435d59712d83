# baton: build, test, demo, install.
#   make test      install what is needed, build, run every test (ends with test-vm)
#   make test-vm   the kernel adapter path (hciN) in a VM with Debian's kernel
#   make demo      two agents on a simulated radio, handing notes to each other
#   make install   PREFIX=/usr/local DESTDIR= : binary, man pages, user unit
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/user
SWIFT ?= swift

.PHONY: all build release test setup demo install clean test-vm

all: build

setup:
	Tests/Scripts/setup.sh

build:
	Tests/Scripts/setup.sh --build
	$(SWIFT) build

release:
	Tests/Scripts/setup.sh --build
	$(SWIFT) build -c release

test: setup
	$(SWIFT) build
	$(SWIFT) test
	$(MAKE) test-vm

clean:
	rm -rf .build

# The kernel adapter path (hciN, HCI user channel) inside a VM running Debian's
# kernel under qemu; installs qemu etc. itself, caches the kernel in Tests/VM/cache.
test-vm: setup
	$(SWIFT) build
	Tests/VM/run.sh
