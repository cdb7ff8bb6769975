package micro

// fenwick is a Fenwick tree of per-message token counts that grows at the
// end: appending, updating and summing a prefix all take O(log n), so the
// cost of a turn does not grow with the history.
type fenwick struct {
	tree []int // 1-based
	val  []int
}

func (f *fenwick) len() int { return len(f.val) }

// push appends v as the value of index len().
func (f *fenwick) push(v int) {
	f.val = append(f.val, v)
	i := len(f.val) // 1-based index of the new element
	// tree[i] covers (i - lowbit(i), i]: v plus the elements before it in
	// that range.
	s := v + f.prefix(i-1) - f.prefix(i-(i&-i))
	f.tree = append(f.tree, s)
}

// set changes the value at index i.
func (f *fenwick) set(i, v int) {
	d := v - f.val[i]
	if d == 0 {
		return
	}
	f.val[i] = v
	for j := i + 1; j <= len(f.tree); j += j & -j {
		f.tree[j-1] += d
	}
}

// prefix is the sum of the first n values.
func (f *fenwick) prefix(n int) int {
	s := 0
	for j := min(n, len(f.tree)); j > 0; j -= j & -j {
		s += f.tree[j-1]
	}
	return s
}

// total is the sum of all values.
func (f *fenwick) total() int { return f.prefix(len(f.val)) }
