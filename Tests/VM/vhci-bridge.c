/*
 * vhci-bridge: makes the guest's hciN one more controller on the host's
 * simulated radio (test infrastructure for Tests/VM/run.sh, not product).
 *
 * It opens /dev/vhci and asks for a primary controller (the kernel creates
 * hciN and answers with a vendor packet naming N), then forwards whole H4
 * packets both ways between /dev/vhci and a virtio-serial port, which qemu
 * connects to a bumble controller's TCP port on the host.
 *
 * /dev/vhci is packet framed: each read(2) returns one packet with its H4
 * type byte and each write(2) must be one. The virtio-serial port is a byte
 * stream, so packets coming from it are re-framed from their H4 headers.
 *
 *   vhci-bridge [PORT] [INDEX_FILE]
 *     PORT        default /dev/vport0p1 (waits up to 5 s for it to appear)
 *     INDEX_FILE  where to write N once hciN exists (default /run/vhci-index)
 *
 * Built with `gcc -static -O2`; it logs one line per event on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUFFER_SIZE (1 + 4 + 65535)

static const char *program = "vhci-bridge";

static void fail(const char *what) {
  fprintf(stderr, "%s: %s: %s\n", program, what, strerror(errno));
  exit(1);
}

/* Writes all of buf, looping over short writes and EINTR. */
static void write_all(int fd, const uint8_t *buf, size_t len, const char *what) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fail(what);
    }
    buf += n;
    len -= (size_t)n;
  }
}

/* Length of the whole H4 packet at buf (type byte included) once its header
 * is complete; 0 when more bytes are needed; -1 for an unknown type byte. */
static long h4_length(const uint8_t *buf, size_t have) {
  if (have < 1) return 0;
  switch (buf[0]) {
  case 0x01: /* command: opcode(2) len(1) */
    return have < 4 ? 0 : 4 + buf[3];
  case 0x02: /* ACL: handle(2) len(2) */
    return have < 5 ? 0 : 5 + (buf[3] | (buf[4] << 8));
  case 0x03: /* SCO: handle(2) len(1) */
    return have < 4 ? 0 : 4 + buf[3];
  case 0x04: /* event: code(1) len(1) */
    return have < 3 ? 0 : 3 + buf[2];
  case 0x05: /* ISO: handle(2) len(2, 14 bits) */
    return have < 5 ? 0 : 5 + ((buf[3] | (buf[4] << 8)) & 0x3fff);
  default:
    return -1;
  }
}

int main(int argc, char **argv) {
  const char *port_path = argc > 1 ? argv[1] : "/dev/vport0p1";
  const char *index_path = argc > 2 ? argv[2] : "/run/vhci-index";
  static uint8_t in[BUFFER_SIZE * 2];
  static uint8_t out[BUFFER_SIZE];
  size_t have = 0;

  int port = -1;
  for (int i = 0; i < 50 && port < 0; i++) {
    port = open(port_path, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (port < 0) usleep(100000);
  }
  if (port < 0) fail(port_path);

  int vhci = open("/dev/vhci", O_RDWR | O_CLOEXEC);
  if (vhci < 0) fail("/dev/vhci");
  /* HCI_VENDOR_PKT, opcode 0x00: a primary (BR/EDR/LE) controller, now. */
  const uint8_t create[2] = {0xff, 0x00};
  write_all(vhci, create, sizeof create, "/dev/vhci (create)");

  for (;;) {
    struct pollfd fds[2] = {{vhci, POLLIN, 0}, {port, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      fail("poll");
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(vhci, out, sizeof out);
      if (n < 0 && errno != EINTR && errno != EAGAIN) fail("/dev/vhci (read)");
      if (n == 0) {
        fprintf(stderr, "%s: /dev/vhci closed\n", program);
        return 1;
      }
      if (n >= 4 && out[0] == 0xff) {
        /* The kernel's answer to our vendor packet: ff, opcode, index (le16). */
        int index = out[2] | (out[3] << 8);
        FILE *f = fopen(index_path, "w");
        if (f) {
          fprintf(f, "%d\n", index);
          fclose(f);
        }
        fprintf(stderr, "%s: hci%d <-> %s\n", program, index, port_path);
      } else if (n > 0) {
        write_all(port, out, (size_t)n, "port (write)");
      }
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(port, in + have, sizeof in - have);
      if (n < 0 && errno != EINTR && errno != EAGAIN) fail("port (read)");
      if (n == 0) {
        /* No host connected to the port (yet): do not spin. */
        usleep(10000);
        continue;
      }
      if (n > 0) have += (size_t)n;
      size_t start = 0;
      for (;;) {
        long len = h4_length(in + start, have - start);
        if (len < 0) {
          fprintf(stderr, "%s: dropping byte 0x%02x (not an H4 packet type)\n", program,
                  in[start]);
          start++;
          continue;
        }
        if (len == 0 || (size_t)len > have - start) break;
        /* Each write to /dev/vhci is one whole packet. While the adapter is
         * down (between users; the host's controller may still send
         * advertising reports, since its reset stops nothing) the kernel
         * refuses packets with ENXIO: drop them, the adapter is still ours. */
        while (write(vhci, in + start, (size_t)len) < 0 && errno != ENXIO) {
          if (errno != EINTR && errno != EAGAIN) fail("/dev/vhci (write)");
        }
        start += (size_t)len;
      }
      memmove(in, in + start, have - start);
      have -= start;
    }
  }
}
