package linear

// cache is Lowe's memo of the configurations already explored: pairs of a
// set of linearized operations and a model state. A hard history reaches
// hundreds of thousands of them, so they live in flat arrays rather than one
// allocation each, and the map holds only the newest index per hash.
//
// Operations are numbered in call order and are linearized roughly in that
// order, so a set is mostly a run of ones, a short frontier, then zeros. A
// set is stored as that frontier alone (see trim): a copy of the whole
// bitset per configuration made the memo quadratic in the history's length
// (13 GB for a partition of 300,000 operations checked in order).
type cache struct {
	newest map[uint64]int32
	// Entry i's set has every word below lo[i] full, the words
	// frontier[start[i]:start[i+1]] from lo[i] on, and zeros after them.
	lo       []int32
	start    []int
	frontier []uint64
	states   []any
	older    []int32 // the previous entry with the same hash, or -1
}

func newCache() *cache {
	return &cache{newest: map[uint64]int32{}, start: []int{0}}
}

// trim splits a set into the number of full words it starts with and the
// words after them up to the last one not empty.
func trim(b bitset) (int, bitset) {
	lo := 0
	for lo < len(b) && b[lo] == ^uint64(0) {
		lo++
	}
	hi := len(b)
	for hi > lo && b[hi-1] == 0 {
		hi--
	}
	return lo, b[lo:hi]
}

// add records a configuration, given its hash, and reports whether it was
// new.
func (c *cache) add(hash uint64, linearized bitset, state any, equal func(a, b any) bool) bool {
	lo, front := trim(linearized)
	first, found := c.newest[hash]
	if found {
		for i := first; i >= 0; i = c.older[i] {
			if int(c.lo[i]) == lo && bitset(c.frontier[c.start[i]:c.start[i+1]]).equal(front) && equal(c.states[i], state) {
				return false
			}
		}
	} else {
		first = -1
	}
	c.newest[hash] = int32(len(c.states))
	c.lo = append(c.lo, int32(lo))
	c.frontier = append(c.frontier, front...)
	c.start = append(c.start, len(c.frontier))
	c.states = append(c.states, state)
	c.older = append(c.older, first)
	return true
}
