package ncclog

import "bytes"

// findNCCL is the analyser's search: the first place in b where what NCCL
// prints may begin, "NC?L" or "NE?/" ("NCCL " or "NET/", which the caller
// checks), and the end of the line it is on. at is -1 where there is none;
// eol is the index of the first '\n' at or after at, or -1 where the line
// runs to the end of b.
//
// It runs on every byte of the log, so it is vectorised where the CPU
// allows (search_amd64.s: AVX2, 32 positions a step, each tested on three
// bytes of the pattern at once, so that the 'N's of "N/A" or "NVIDIA" do
// not stop it, and going on to the line's end in the same call). findNCCLGeneric is the
// portable version, and the reference the vectorised one is tested against.
func findNCCLGeneric(b []byte, from int) (at, eol int) {
	for i := from; ; i++ {
		j := bytes.IndexByte(b[i:], 'N')
		if j < 0 {
			return -1, -1
		}
		i += j
		if i+3 < len(b) && (b[i+1] == 'C' && b[i+3] == 'L' || b[i+1] == 'E' && b[i+3] == '/') {
			return i, lineEnd(b, i)
		}
	}
}

// lineEnd is the index of the first '\n' in b at or after i, or -1.
func lineEnd(b []byte, i int) int {
	if e := bytes.IndexByte(b[i:], '\n'); e >= 0 {
		return i + e
	}
	return -1
}
