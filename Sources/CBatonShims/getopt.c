#include "baton_getopt.h"

const char *baton_optarg(void) { return optarg; }
int baton_optind(void) { return optind; }
int baton_optopt(void) { return optopt; }

void baton_getopt_reset(void) {
  optind = 0;
  opterr = 0;
}
