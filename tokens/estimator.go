package tokens

import (
	_ "embed"
	"math/bits"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Estimator is a fast, conservative token estimator tuned to o200k_base.
//
// It splits text the way o200k_base's pre-tokenizer does — words with the
// space or punctuation before them, camel-case humps, groups of up to three
// digits, punctuation runs with the newlines after them, whitespace runs —
// in one pass over the bytes, without allocating, and charges each piece
// what byte-pair encoding charges such a piece on average (by its kind,
// letter case and length), with a margin so the sum errs high. Non-ASCII
// runes are charged by script and by whether o200k_base has a token for
// the rune alone: common Chinese characters cost less than one token, rare
// ones two or three. A word that is not one token costs at least the tokens
// o200k_base's vocabulary cuts it into, so random letters (hashes, keys,
// base64) are not charged like English; ASCII control bytes, such as the
// ESC of a terminal colour, are a token each.
//
// The tables are fitted to o200k_base, not guessed: see weights_gen_test.go
// and the accuracy tests. The zero value is ready to use and safe for concurrent use.
type Estimator struct{}

// NewEstimator returns an Estimator.
func NewEstimator() *Estimator { return &Estimator{} }

// Count returns an estimate of the number of o200k_base tokens in text. It
// errs high: on real code, prose, JSON and CJK text it is within a few
// percent above the exact count, and not more than 5% below it.
func (*Estimator) Count(text string) int {
	if text == "" {
		return 0
	}
	// The tables carry the margin; round to nearest, at least one token.
	return max(int((defaultWeights.cost(text)+unit/2)/unit), 1)
}

// Costs are in hundredths of a token.
const unit = 100

// byte classes
const (
	cOther = iota // ASCII punctuation, symbols, control bytes
	cLower        // a-z
	cUpper        // A-Z
	cDigit        // 0-9
	cSpace        // ' ', '\t', '\v', '\f'
	cNL           // '\r', '\n'
	cHigh         // a byte of a multi-byte rune, or an invalid byte
	cCtrl         // other ASCII control bytes: ESC, NUL, DEL, …
)

var classOf = [256]uint8{
	0x00: cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl,
	0x0E: cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl, cCtrl,
	0x7F: cCtrl,
	'\t': cSpace, '\v': cSpace, '\f': cSpace, ' ': cSpace, '\r': cNL, '\n': cNL,
	'0': cDigit, cDigit, cDigit, cDigit, cDigit, cDigit, cDigit, cDigit, cDigit, cDigit,
	'A': cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper,
	cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper, cUpper,
	'a': cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower,
	cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower, cLower,
	0x80: cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh,
	cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh,
	cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh,
	cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh,
	cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh,
	cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh,
	cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh,
	cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh, cHigh,
}

// What comes before a word: its prefix, or for a word without one, what
// the previous piece ended with. A word right after a letter is a camel-case
// hump (or a piece of base64); right after a digit, a piece of a hash or
// identifier.
const (
	preNone   = iota // start of text, after a newline or a whitespace piece
	preLetter        // no prefix, after a letter (case change)
	preDigit         // no prefix, after a digit
	preSpace         // one space
	prePunct         // one punctuation byte, tab or symbol
	nPre
)

// Letter case of a word's ASCII letters.
const (
	shapeLower = iota // abc
	shapeCap          // Abc
	shapeUpper        // ABC, A
	shapeMixed        // ABc: two or more capitals, then small letters
	nShape
)

// maxLetters is the longest word the word table holds; longer words cost
// wordLong more per letter.
const maxLetters = 32

func wordIndex(pre, shape, letters int) int {
	return offWord + (pre*nShape+shape)*maxLetters + letters
}

// Classes of non-ASCII runes. "In" means o200k_base has a token for the
// rune alone.
const (
	rHanIn = iota
	rHanOut
	rKanaIn
	rKanaOut
	rHangulIn
	rHangulOut
	rLetter2In // other letters of two UTF-8 bytes: Latin, Greek, Cyrillic, …
	rLetter2Out
	rLetter3In
	rLetter3Out
	rLetter4 // four bytes: rare Han, historic scripts
	rSym2In  // symbols and punctuation
	rSym2Out
	rSym3In // CJK punctuation, arrows, box drawing, …
	rSym3Out
	rSym4 // emoji
	rInvalid
	nRune
)

// maxPunct is the longest punctuation run the punct table holds.
const maxPunct = 16

// Offsets of the cost tables in weights.t.
const (
	offWord        = 0                                // by wordIndex
	offWordLong    = offWord + nPre*nShape*maxLetters // each letter beyond maxLetters-1, by pre
	offPunct       = offWordLong + nPre               // by punctIndex
	offPunctLong   = offPunct + 4*maxPunct            // each byte beyond maxPunct-1
	offPunctChange = offPunctLong + 1                 // each change of byte in a long punctuation run
	offSpace       = offPunctChange + 1               // spaces and tabs, by lenBucket
	offNewline     = offSpace + 8                     // whitespace ending in newlines, by lenBucket
	offSpaceLong   = offNewline + 8                   // each 64 bytes of a long run of spaces
	offTabLong     = offSpaceLong + 1                 // each 64 bytes of a long run of tabs, or of spaces and tabs
	offNewlineLong = offTabLong + 1                   // each 16 bytes of a long run ending in newlines
	offWSChange    = offNewlineLong + 1               // each change between spaces and tabs in a run
	offNLGroup     = offWSChange + 1                  // each group of newlines after the first in a run
	offDigits      = offNLGroup + 1                   // a group of up to three digits
	offPrefix      = offDigits + 1                    // a prefix before a word without ASCII letters
	offWordIn      = offPrefix + 1                    // a word that is one o200k token, by pre
	offWordBareIn  = offWordIn + nPre                 // a word whose letters alone are one token, by pre
	offContraction = offWordBareIn + nPre             // 's, 't, …
	offSymPrefix   = offContraction + 1               // a non-ASCII symbol before a word
	offCJKToken    = offSymPrefix + 1                 // two to four CJK letters that are one o200k token
	offRunes       = offCJKToken + 1                  // each non-ASCII rune, by class
	nWeights       = offRunes + nRune
)

// weights holds the cost of each kind of piece, in hundredths of a token.
type weights struct {
	t [nWeights]uint16
	// trace, when set, counts how often each entry is charged; the
	// generator of weights_gen.go fits the tables with it.
	trace *[nWeights]int64
}

// use charges entry k times times.
func (w *weights) use(k int, times int) int64 {
	if w.trace != nil {
		w.trace[k] += int64(times)
	}
	return int64(w.t[k]) * int64(times)
}

func punctIndex(spaced, newline bool, n int) int {
	i := offPunct + n
	if spaced {
		i += maxPunct
	}
	if newline {
		i += 2 * maxPunct
	}
	return i
}

func lenBucket(n int) int { return min(bits.Len(uint(n)), 7) }

// cost returns the cost of s in hundredths of a token.
func (w *weights) cost(s string) int64 {
	var cost int64
	n := len(s)
	pre := preNone
	for i := 0; i < n; {
		var c int64
		switch classOf[s[i]] {
		case cLower, cUpper:
			c, i = w.word(s, i, pre, 0)
			pre = preLetter
			cost += c
			continue
		case cDigit:
			j := i + 1
			for j < n && classOf[s[j]] == cDigit {
				j++
			}
			c = w.use(offDigits, (j-i+2)/3)
			i = j
			pre = preDigit
			cost += c
			continue
		case cCtrl:
			// o200k's merges never join a control byte (ESC of a terminal
			// colour, NUL, DEL) with anything: it is a token of its own,
			// and it cuts the punctuation run it is in.
			c, i = oneToken, i+1
		case cSpace, cNL:
			if i+1 < n && isASCIILetter(s[i+1]) && s[i] != '\n' && s[i] != '\r' {
				// Fast path: " word", "\tword".
				p := prePunct
				if s[i] == ' ' {
					p = preSpace
				}
				c, i = w.word(s, i+1, p, s[i])
				pre = preLetter
				cost += c
				continue
			}
			c, i = w.space(s, i)
		case cOther:
			if i+1 < n && isASCIILetter(s[i+1]) {
				// Fast path: ".word", "_word".
				c, i = w.word(s, i+1, prePunct, s[i])
				pre = preLetter
				cost += c
				continue
			}
			if i+1 == n || classOf[s[i+1]] == cSpace || classOf[s[i+1]] == cDigit {
				// Fast path: a lone "(", ",", "=".
				c, i = w.use(punctIndex(false, false, 1), 1), i+1
				break
			}
			c, i = w.punct(s, i, false)
		default:
			r, ok := rune3(s, i)
			size := 3
			if !ok {
				r, size = decodeRune(s[i:])
			}
			switch k := runeKind(r); {
			case r == utf8.RuneError && size == 1:
				c, i = w.use(offRunes+rInvalid, 1), i+1
			case k == kLetter:
				c, i = w.word(s, i, pre, 0)
				cost += c
				pre = preLetter
				continue
			case k == kOther:
				// o200k treats these as whitespace or digits; both are rare.
				c, i = w.use(offRunes+runeClass(r, size, false), 1), i+size
			default:
				c, i = w.punct(s, i, false)
			}
		}
		cost += c
		// A space or punctuation piece may have ended in a word.
		pre = preNone
		switch classOf[s[i-1]] {
		case cLower, cUpper:
			pre = preLetter
		case cHigh:
			// Most often the piece ends in a valid three-byte rune.
			var r rune
			ok := false
			if i >= 3 {
				r, ok = rune3(s, i-3)
			}
			if !ok {
				r, _ = utf8.DecodeLastRuneInString(s[:i])
			}
			if isLetter(r) {
				pre = preLetter
			}
		}
	}
	return cost
}

// space charges the whitespace run at s[i] and the piece its last space
// joins, if any, and returns the cost and the index after what it charged.
func (w *weights) space(s string, i int) (int64, int) {
	n := len(s)
	j := i
	lastNL := -1
	groups := 0 // runs of newlines: each blank line with spaces on it costs
	for ; j < n; j++ {
		c := classOf[s[j]]
		if c == cNL {
			if j == i || classOf[s[j-1]] != cNL {
				groups++
			}
			lastNL = j
		} else if c != cSpace {
			break
		}
	}
	var cost int64
	start := i
	if lastNL >= 0 {
		start = lastNL + 1
		k := start - i
		cost += w.use(offNewline+lenBucket(k), 1) + w.use(offNewlineLong, k/16) + w.use(offNLGroup, groups-1)
	}
	k := j - start // spaces and tabs after the last newline
	if k == 0 {
		return cost, j
	}
	if j < n {
		// The last space or tab joins a word; the last space joins
		// punctuation.
		last := s[j-1]
		c := classOf[s[j]]
		word := c == cLower || c == cUpper || c == cHigh && startsLetter(s[j:])
		punct := last == ' ' && (c == cOther || c == cHigh && startsSymbol(s[j:]))
		if word || punct {
			if k > 1 {
				cost += w.spaces(s[start : j-1])
			}
			var pc int64
			switch {
			case !word:
				pc, j = w.punct(s, j, true)
			case last == ' ':
				pc, j = w.word(s, j, preSpace, ' ')
			default:
				pc, j = w.word(s, j, prePunct, last)
			}
			return cost + pc, j
		}
		if k > 1 {
			// Before a digit or a symbol the last space stands alone.
			return cost + w.spaces(s[start:j-1]) + w.spaces(s[j-1:j]), j
		}
	}
	return cost + w.spaces(s[start:j]), j
}

// spaces charges a piece of spaces and tabs.
func (w *weights) spaces(s string) int64 {
	c := changes(s)
	long := offSpaceLong
	if c > 0 || s[0] != ' ' {
		long = offTabLong
	}
	return w.use(offSpace+lenBucket(len(s)), 1) + w.use(long, len(s)/64) + w.use(offWSChange, c)
}

// changes counts the places where s changes from one byte to another: a
// mixed whitespace run costs more than a uniform one.
func changes(s string) int {
	c := 0
	for i := 1; i < len(s); i++ {
		if s[i] != s[i-1] {
			c++
		}
	}
	return c
}

// punct charges the punctuation run at s[i] (after a space if spaced) and
// the newlines and slashes after it. A lone punctuation byte or symbol
// followed by a letter is that word's prefix instead.
func (w *weights) punct(s string, i int, spaced bool) (int64, int) {
	n := len(s)
	j := i
	var cost int64
	ascii := 0
	high := 0 // non-ASCII symbols and invalid bytes: runes, as utf8 counts them
	for j < n {
		c := classOf[s[j]]
		if c == cOther {
			ascii++
			j++
			continue
		}
		if c != cHigh {
			break
		}
		r, size := decodeRune(s[j:])
		if r == utf8.RuneError && size == 1 {
			cost += w.use(offRunes+rInvalid, 1)
			high++
			j++
			continue
		}
		if kind(r) != kSymbol {
			break
		}
		cost += w.use(offRunes+runeClass(r, size, false), 1)
		high++
		j += size
	}
	if !spaced && j < n && (ascii == 1 && j == i+1 || ascii == 0 && high == 1 && utf8.RuneStart(s[i])) {
		if c := classOf[s[j]]; c == cLower || c == cUpper || c == cHigh && startsLetter(s[j:]) {
			if ascii == 1 {
				return w.word(s, j, prePunct, s[i])
			}
			if c != cHigh {
				// A symbol before an ASCII word, as in "→import": it is
				// rarely merged with the word. (Before CJK it often is,
				// and is charged as a piece of its own.)
				wc, k := w.word(s, j, preNone, 0)
				return cost + w.use(offSymPrefix, 1) + wc, k
			}
		}
	}
	newline := false
	for j < n && (classOf[s[j]] == cNL || s[j] == '/') {
		if s[j] == '/' {
			ascii++
		} else {
			newline = true
		}
		j++
	}
	if ascii > 0 {
		if ascii < maxPunct {
			cost += w.use(punctIndex(spaced, newline, ascii), 1)
		} else {
			// A long rule of one byte ("=====") is cheaper than a
			// mixed run.
			cost += w.use(punctIndex(spaced, newline, maxPunct-1), 1) + w.use(offPunctLong, ascii-maxPunct+1) +
				w.use(offPunctChange, changes(s[i:j]))
		}
	} else {
		// Symbols only: a piece costs one token at least.
		cost += w.use(punctIndex(spaced, newline, 0), 1)
	}
	return cost, j
}

// word charges the word at s[i]: letters up to a change from small to
// capital, and a contraction ('s, 't, 're, 've, 'm, 'll, 'd). prefix is the
// ASCII byte before it that belongs to the piece (pre is then preSpace or
// prePunct), or 0.
func (w *weights) word(s string, i int, pre int, prefix byte) (int64, int) {
	n := len(s)
	// The common case, ASCII letters: capitals, then small letters.
	j := i
	for j < n && s[j]-'A' < 26 {
		j++
	}
	k := j
	for j < n && s[j]-'a' < 26 {
		j++
	}
	upper, lower := k-i, j-k
	var cost int64
	ascii := true
	if j < n && s[j] >= utf8.RuneSelf {
		var c int64
		end := j
		c, j, upper, lower = w.wordRunes(s, j, upper, lower)
		cost += c
		ascii = j == end
	}
	end := j
	if j+1 < n && s[j] == '\'' {
		if k := contraction(s[j+1:]); k > 0 {
			j += k
			cost += w.use(offContraction, 1)
		}
	}
	letters := upper + lower
	if letters == 0 {
		if pre == preSpace || pre == prePunct {
			cost += w.use(offPrefix, 1)
		}
		return cost, j
	}
	// Short words are nearly always one token, and the tables charge them
	// without a look-up; but inside a run of letters and digits (a hash, a
	// key, base64) or after punctuation they are often random letters,
	// which are not.
	short := letters < minVocabLetters && letters > 1 && pre != preSpace && pre != preNone
	if ascii && (short || letters >= minVocabLetters) && letters <= maxVocabLetters {
		var h uint64
		if m := end - i; m <= 8 && i+8 <= n {
			// spanHash inlined for the common short word.
			h = hashWord(le64(s, i)&(1<<(8*m)-1), m)
		} else {
			h = spanHash(s, i, end)
		}
		if prefix != 0 {
			// Load both filter blocks before testing either, so that
			// the two cache misses overlap.
			kp := prefixKey(h, prefix)
			bp, bh := le64(o200kWords, int(kp>>49)*8), le64(o200kWords, int(h>>49)*8)
			if mp := bloomMask(kp); bp&mp == mp {
				return cost + w.use(offWordIn+pre, 1), j
			}
			if mh := bloomMask(h); bh&mh == mh {
				return cost + w.use(offWordBareIn+pre, 1), j
			}
		} else if inVocab(h) {
			return cost + w.use(offWordIn+pre, 1), j
		}
	}
	shape := shapeLower
	switch {
	case lower == 0:
		shape = shapeUpper
	case upper == 1:
		shape = shapeCap
	case upper > 1:
		shape = shapeMixed
	}
	var tc int64
	if letters < maxLetters {
		tc = w.use(wordIndex(pre, shape, letters), 1)
	} else {
		tc = w.use(wordIndex(pre, shape, maxLetters-1), 1) + w.use(offWordLong+pre, letters-maxLetters+1)
	}
	if ascii && (short || letters >= minVocabLetters) {
		// The word is not one token. The tables charge what such words
		// cost in text; random letters cost more, and o200k's vocabulary
		// says how much: a word costs at least the tokens it is cut into
		// by matching the longest tokens from the left.
		tc = max(tc, int64(segments(s, i, end))*oneToken)
	}
	return cost + tc, j
}

// oneToken is the cost of a piece that is one token, with the margin the
// tables carry (4%).
const oneToken = unit + unit/25

// maxSegment is the longest token segments looks for.
const maxSegment = 12

// segments returns how many of o200k_base's word tokens s[i:j], ASCII letters
// without a prefix, is cut into by taking the longest token from the left.
// Byte-pair encoding merges long tokens from shorter ones, so it looks for
// a longer token only while one of the two shorter ones before it was a
// token. Every letter is a token of its own.
func segments(s string, i, j int) int {
	n := 0
	for i < j {
		end := i + 1
		miss := 0
		for k := i + 2; k <= min(j, i+maxSegment) && miss < 2; k++ {
			if inVocab(spanHash(s, i, k)) {
				end, miss = k, 0
			} else {
				miss++
			}
		}
		i = end
		n++
	}
	return n
}

// wordRunes continues a word at the non-ASCII byte s[j], with upper capitals
// and lower small letters so far: any letter continues it, except a capital
// after a small letter. It charges the non-ASCII letters and returns the
// counts of ASCII letters.
func (w *weights) wordRunes(s string, j, upper, lower int) (int64, int, int, int) {
	n := len(s)
	small := lower > 0 // the last letter was small or not ASCII
	var cost int64
loop:
	for j < n {
		switch classOf[s[j]] {
		case cLower:
			lower++
			small = true
		case cUpper:
			if small {
				break loop
			}
			upper++
		case cHigh:
			var size int
			r, ok := rune3(s, j)
			if ok {
				size = 3
			} else {
				r, size = decodeRune(s[j:])
			}
			if !isLetter(r) {
				break loop
			}
			small = true
			if isCJK(r) {
				var c int64
				c, j = w.cjkRun(s, j, r)
				cost += c
				continue
			}
			cost += w.use(offRunes+runeClass(r, size, true), 1)
			j += size
			continue
		default:
			break loop
		}
		j++
	}
	return cost, j, upper, lower
}

// isCJK reports whether r is a Han, kana or Hangul letter.
func isCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x3041 && r <= 0x30FA || r >= 0xAC00 && r <= 0xD7A3
}

// maxCJKToken is the most runes of a CJK token the estimator looks for.
const maxCJKToken = 4

// cjkRun charges the run of CJK letters at s[j], the first of which is r,
// and returns the cost and the index after the run. Common words such as
// 我们 and 问题 are one o200k token each, so Chinese costs less than a
// token per character: at each letter it looks for a token of two letters
// first, and for longer tokens only after a hit, as byte-pair merges build
// long tokens from shorter ones; a letter that starts no such token is
// charged alone. The run is scanned in one pass: each rune is decoded once,
// as the letter after the one before it.
func (w *weights) cjkRun(s string, j int, r rune) (int64, int) {
	var cost int64
	for {
		// r, a CJK letter, is at s[j]; CJK letters are three bytes each.
		r1, ok := rune3(s, j+3)
		if !ok || !isCJK(r1) {
			return cost + w.use(offRunes+cjkClass(r), 1), j + 3
		}
		var h uint64
		if j+8 <= len(s) {
			h = hashWord(le64(s, j)&(1<<48-1), 6)
		} else {
			h = spanHash(s, j, j+6)
		}
		key := cjkKey(h)
		if m := bloomMask(key); le64(o200kCJK, int(key>>54)*8)&m != m { // !inCJKVocab(key), inlined
			cost += w.use(offRunes+cjkClass(r), 1)
			j += 3
			r = r1
		} else {
			end := j + 6
			for m := 3; m <= maxCJKToken; m++ {
				r, ok := rune3(s, end)
				if !ok || !isCJK(r) || !inCJKVocab(cjkKey(cjkHash(s, j, end+3))) {
					break
				}
				end += 3
			}
			cost += w.use(offCJKToken, 1)
			j = end
			if r, ok = rune3(s, j); !ok || !isCJK(r) {
				return cost, j
			}
		}
		if r < 0x4E00 && !cjkLetter(r) { // Han and Hangul are letters
			return cost, j
		}
	}
}

// cjkLetter is isLetter for a CJK rune (see isCJK): all Han and Hangul
// are letters, and kana but for a few marks.
func cjkLetter(r rune) bool {
	return r >= 0x4E00 || r >= 0x3041 && r <= 0x3096 || r >= 0x30A1 && r <= 0x30FA || kind(r) == kLetter
}

// cjkClass returns the class of the CJK letter r (see isCJK): what
// runeClass returns for it.
func cjkClass(r rune) int {
	c := rHanIn
	if r >= 0xAC00 {
		c = rHangulIn
	} else if r < 0x3400 {
		c = rKanaIn
	}
	if !single(r) {
		c++
	}
	return c
}

// cjkHash returns wordHash(s[j:k]) for two to four CJK letters.
func cjkHash(s string, j, k int) uint64 {
	switch n := k - j; {
	case k+8 > len(s) || n > 16:
		return spanHash(s, j, k)
	case n <= 8:
		return hashWord(le64(s, j)&(1<<(8*n)-1), n)
	default:
		return hashWord(mix(le64(s, j))^le64(s, j+8)&(1<<(8*(n-8))-1), n)
	}
}

// cjkKey returns the filter key of CJK letters hashed to h.
func cjkKey(h uint64) uint64 { return mix(h ^ 0xC3A5C85C97CB3127) }

// The CJK tokens (about 4,000) have a filter of their own, small enough to
// stay in the fastest cache: o200k_cjk.bloom, 2^16 bits.
const cjkBloomBlocks = 1 << 10

//go:embed o200k_cjk.bloom
var o200kCJK string

func inCJKVocab(key uint64) bool {
	m := bloomMask(key)
	return le64(o200kCJK, int(key>>54)*8)&m == m
}

// o200k_base's tokens that are words — letters alone, or after a space or
// an ASCII punctuation byte — are kept in a Bloom filter of 2^21 bits
// (o200k_words.bloom, written by the generator in weights_gen_test.go), so the
// estimator knows whether a word is one token without holding the
// vocabulary. About 0.3% of other words pass for tokens.
const (
	// Words of up to three letters are nearly always one token; the
	// tables charge them without a look-up, which is a third of the time.
	minVocabLetters = 4
	maxVocabLetters = 40
	bloomBlocks     = 1 << 15 // 64-bit blocks; four bits per word in one block
)

//go:embed o200k_words.bloom
var o200kWords string

// le64 returns the eight bytes at s[i:] as a little-endian number.
func le64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func mix(x uint64) uint64 {
	x *= 0x9E3779B97F4A7C15
	return x ^ x>>29
}

// hashWord hashes a word of n ≤ 8 bytes held in v.
func hashWord(v uint64, n int) uint64 { return mix(v ^ uint64(n)*0xC2B2AE3D27D4EB4F) }

// wordHash hashes a word, eight bytes at a time.
func wordHash(word string) uint64 {
	n := len(word)
	var h uint64
	for len(word) > 8 {
		h = mix(h ^ le64(word, 0))
		word = word[8:]
	}
	var v uint64
	for i := len(word) - 1; i >= 0; i-- {
		v = v<<8 | uint64(word[i])
	}
	return hashWord(h^v, n)
}

// spanHash returns wordHash(s[i:j]), reading eight bytes at a time when s
// has them.
func spanHash(s string, i, j int) uint64 {
	n := j - i
	if j+8 > len(s) {
		return wordHash(s[i:j])
	}
	var h uint64
	for j-i > 8 {
		h = mix(h ^ le64(s, i))
		i += 8
	}
	return hashWord(h^le64(s, i)&(1<<(8*(j-i))-1), n)
}

// prefixKey returns the key of the word hashed to h after the byte prefix.
func prefixKey(h uint64, prefix byte) uint64 { return mix(h ^ uint64(prefix)) }

// inVocab reports whether the filter holds key: four bits in one block.
func inVocab(key uint64) bool {
	m := bloomMask(key)
	return le64(o200kWords, int(key>>49)*8)&m == m
}

func bloomMask(key uint64) uint64 {
	return 1<<(key&63) | 1<<(key>>6&63) | 1<<(key>>12&63) | 1<<(key>>18&63)
}

// decodeRune is utf8.DecodeRuneInString with a fast path for three-byte
// runes, which CJK text is made of.
func decodeRune(s string) (rune, int) {
	if r, ok := rune3(s, 0); ok {
		return r, 3
	}
	return utf8.DecodeRuneInString(s)
}

// rune3 decodes the valid three-byte rune at s[i], if there is one.
func rune3(s string, i int) (rune, bool) {
	if i+3 > len(s) {
		return 0, false
	}
	x := uint32(s[i])<<16 | uint32(s[i+1])<<8 | uint32(s[i+2])
	r := rune(x>>4&0xF000 | x>>2&0xFC0 | x&0x3F)
	// Lead and continuation bytes, no overlong form, no surrogate.
	return r, x&0xF0C0C0 == 0xE08080 && r >= 0x800 && uint32(r-0xD800) >= 0x800
}

// contraction returns the length of the contraction whose letters start s,
// counting the apostrophe before s, or 0.
func contraction(s string) int {
	switch s[0] | 0x20 {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if len(s) > 1 && s[1]|0x20 == 'e' {
			return 3
		}
	case 'l':
		if len(s) > 1 && s[1]|0x20 == 'l' {
			return 3
		}
	}
	return 0
}

// runeClass returns the class of the non-ASCII rune r of size bytes.
func runeClass(r rune, size int, letter bool) int {
	if size == 4 {
		if letter {
			return rLetter4
		}
		return rSym4
	}
	out := 0
	if !single(r) {
		out = 1
	}
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, r >= 0x3400 && r <= 0x4DBF, r >= 0xF900 && r <= 0xFAFF:
		return rHanIn + out
	case r >= 0x3040 && r <= 0x30FF:
		return rKanaIn + out
	case r >= 0xAC00 && r <= 0xD7AF, r >= 0x1100 && r <= 0x11FF, r >= 0x3130 && r <= 0x318F:
		return rHangulIn + out
	case letter && size == 2:
		return rLetter2In + out
	case letter:
		return rLetter3In + out
	case size == 2:
		return rSym2In + out
	default:
		return rSym3In + out
	}
}

// single reports whether o200k_base has a token for the rune r alone.
func single(r rune) bool {
	return r < 0x10000 && o200kSingle[r>>6]&(1<<(r&63)) != 0
}

// Kinds of runes as o200k's pre-tokenizer sees them.
const (
	kSymbol = iota // punctuation and symbols: part of punctuation runs
	kLetter        // letters and marks: part of words
	kOther         // whitespace and numbers beyond ASCII, rare
)

// bmpKinds holds the kind of each rune below U+10000, built on first use
// (about a millisecond) so that programs that never see non-ASCII text do
// not pay for it. It is a sync.Once rather than a sync.OnceValue because
// kind is on the hot path of non-ASCII text: Once.Do's fast path is
// inlined, where OnceValue's function is a call.
var bmpKinds struct {
	once sync.Once
	t    *[1 << 16]uint8
}

func buildKinds() {
	t := new([1 << 16]uint8)
	for r := range rune(1 << 16) {
		t[r] = slowKind(r)
	}
	bmpKinds.t = t
}

func slowKind(r rune) uint8 {
	switch {
	case unicode.IsLetter(r) || unicode.IsMark(r):
		return kLetter
	case unicode.IsSpace(r) || unicode.IsNumber(r):
		return kOther
	}
	return kSymbol
}

func kind(r rune) uint8 {
	if r < 1<<16 {
		bmpKinds.once.Do(buildKinds)
		return bmpKinds.t[r]
	}
	return slowKind(r)
}

// runeKind returns kind(r), but kLetter for the runes of isLetter's fast
// path, so that isLetter(r) is runeKind(r) == kLetter.
func runeKind(r rune) uint8 {
	if r >= 0x4E00 && r <= 0x9FFF || r >= 0xAC00 && r <= 0xD7A3 || r >= 0x3041 && r <= 0x3096 || r >= 0x30A1 && r <= 0x30FA {
		return kLetter
	}
	return kind(r)
}

// isLetter reports whether o200k's pre-tokenizer puts r in words.
func isLetter(r rune) bool {
	if r >= 0x4E00 && r <= 0x9FFF || r >= 0xAC00 && r <= 0xD7A3 || r >= 0x3041 && r <= 0x3096 || r >= 0x30A1 && r <= 0x30FA {
		return true // fast path for Han, Hangul, hiragana and katakana
	}
	return kind(r) == kLetter
}

func isASCIILetter(c byte) bool { return c|0x20-'a' < 26 }

func startsLetter(s string) bool {
	r, _ := decodeRune(s)
	return isLetter(r)
}

func startsSymbol(s string) bool {
	r, size := decodeRune(s)
	return !(r == utf8.RuneError && size == 1) && kind(r) == kSymbol
}
