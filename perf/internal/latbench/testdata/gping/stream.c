// The ping-pong's C, compiled here as in ibverbs (cgo builds every .c file of the package).
#include "../../../../../ibverbs/stream.c"
