package serve

import "testing"

// TestMirrorIDs: a block's recall id is the shortest prefix of its
// content hash, of at least idLen digits, that no content before it in
// the conversation took; a content used again gets "-2"; a tagged hash
// keeps its tag; and a second mirror handed the same hashes in the same
// order (a restarted proxy, another replica) hands out the same ids.
func TestMirrorIDs(t *testing.T) {
	hashes := []string{
		"3fa9c2d1e0b4a7f6",
		"3fa9c2d1e0b4a7f6",       // the same content again
		"3fa9c2ffffffffff",       // shares six digits with the first
		"3fa9c2f000000000",       // and seven with the third
		"77e0b1aaaaaaaaaa-head",  // a tag
		"77e0b1aaaaaaaaaa-empty", // another tag on the same hash
		"77e0b1aaaaaaaaaa",
	}
	want := []string{"3fa9c2", "3fa9c2-2", "3fa9c2f", "3fa9c2f0", "77e0b1-head", "77e0b1-empty", "77e0b1"}
	mint := func() []string {
		m := &mirror{used: map[string]int{}, short: map[string]string{}, taken: map[string]bool{}}
		var ids []string
		for _, h := range hashes {
			ids = append(ids, m.id(h))
		}
		return ids
	}
	first, second := mint(), mint()
	for i := range want {
		if first[i] != want[i] || second[i] != first[i] {
			t.Errorf("id of %s = %s, then %s; want %s", hashes[i], first[i], second[i], want[i])
		}
	}
}
