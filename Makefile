# baton: build, test, demo, install.
#   make test      install what is needed, build, run every test
#   make demo      two agents on a simulated radio, handing notes to each other
#   make install   PREFIX=/usr/local DESTDIR= : binary, man pages, user unit
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/user
SWIFT ?= swift

.PHONY: all build release test setup demo install clean

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

demo:
	Tests/Scripts/demo.sh

clean:
	rm -rf .build
