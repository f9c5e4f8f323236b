package linear

// cache is Lowe's memo of the configurations already explored: pairs of a
// set of linearized operations and a model state. A hard history reaches
// hundreds of thousands of them, so they live in flat arrays rather than one
// allocation each, and the map holds only the newest index per hash.
type cache struct {
	words  int
	newest map[uint64]int32
	// Entry i is sets[i*words:(i+1)*words] and states[i]; older[i] is the
	// previous entry with the same hash, or -1.
	sets   []uint64
	states []any
	older  []int32
}

func newCache(words int) *cache {
	return &cache{words: words, newest: map[uint64]int32{}}
}

// add records a configuration, given its hash, and reports whether it was
// new.
func (c *cache) add(hash uint64, linearized bitset, state any, equal func(a, b any) bool) bool {
	first, found := c.newest[hash]
	if found {
		for i := first; i >= 0; i = c.older[i] {
			if bitset(c.sets[int(i)*c.words:int(i+1)*c.words]).equal(linearized) && equal(c.states[i], state) {
				return false
			}
		}
	} else {
		first = -1
	}
	c.newest[hash] = int32(len(c.states))
	c.sets = append(c.sets, linearized...)
	c.states = append(c.states, state)
	c.older = append(c.older, first)
	return true
}
