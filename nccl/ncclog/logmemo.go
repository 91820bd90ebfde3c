package ncclog

import "encoding/binary"

// Every rank prints the same NCCL INFO messages (the variables it was
// given, its NET/IB devices, the plugin it loaded...), so a large log holds
// few distinct ones, each many times. Nearly all of them are idempotent: the
// analysis keeps the first value, or a set of values, or a maximum, so a
// message seen again changes nothing. Only the channel lines count
// something. lineMemo remembers the idempotent messages a worker analysed,
// so that a repeat costs a hash of two words and one comparison instead of
// its parsing.
//
// It is sound across the chunks of one worker: they come in input order,
// so the chunk that analysed a message is merged before any later chunk
// that skips it, and the merge keeps first values and sets as one pass
// does (a bounded list full in a chunk is full in the merge too).

const (
	memoSlots  = 1024 // direct-mapped: a collision replaces the slot
	memoMaxLen = 120  // longer messages are analysed every time
)

// lineMemo is a worker's memory of idempotent messages; its zero value is
// empty. It is not safe for concurrent use.
type lineMemo struct {
	slots [memoSlots]struct {
		n   uint8 // length; 0 for an empty slot
		msg [memoMaxLen]byte
	}
}

// slot is where msg is remembered, or -1 where it is not remembered at all.
func memoSlot(msg []byte) int {
	n := len(msg)
	if n < 8 || n > memoMaxLen {
		return -1
	}
	h := binary.LittleEndian.Uint64(msg) ^ binary.LittleEndian.Uint64(msg[n-8:])*0x9e3779b97f4a7c15 ^ uint64(n)
	h *= 0xff51afd7ed558ccd
	return int(h >> (64 - 10)) // memoSlots = 1<<10
}

// seen reports whether msg was remembered.
func (m *lineMemo) seen(msg []byte) bool {
	i := memoSlot(msg)
	if i < 0 {
		return false
	}
	s := &m.slots[i]
	return int(s.n) == len(msg) && string(s.msg[:s.n]) == string(msg)
}

// add remembers msg, an idempotent message just analysed.
func (m *lineMemo) add(msg []byte) {
	i := memoSlot(msg)
	if i < 0 {
		return
	}
	s := &m.slots[i]
	s.n = uint8(copy(s.msg[:], msg))
}

// idempotent reports whether analysing the INFO message msg a second time
// changes nothing: all but the channel lines, which are counted.
func idempotent(msg []byte) bool {
	return !hasPrefix(msg, "Channel ") && !hasPrefix(msg, "via ")
}
