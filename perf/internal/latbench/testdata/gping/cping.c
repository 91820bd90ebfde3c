// cping's main, called from Go.
#define main cping_main
#include "../cping.c"
