// Package suggest finds the name a misspelled one was meant to be, for
// error messages that say "did you mean …".
package suggest

import "strings"

// Nearest returns the candidate closest to word by edit distance (case
// folded), or "" when none is close enough to be a likely typo: at most
// one edit for words of up to four letters, two for longer ones, or a
// candidate that word is a prefix or an extension of ("operation" for
// "operations"). Ties go to the earlier candidate.
func Nearest(word string, candidates []string) string {
	w := strings.ToLower(word)
	best, bestDist := "", -1
	limit := 2
	if len([]rune(w)) <= 4 {
		limit = 1
	}
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == w {
			return c
		}
		d := Distance(w, lc)
		if d > limit && !(len(w) >= 3 && (strings.HasPrefix(lc, w) || strings.HasPrefix(w, lc))) {
			continue
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between a and b, in runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// DidYouMean returns ` (did you mean "x"?)` for the candidate nearest
// to word, or "" when none is near.
func DidYouMean(word string, candidates []string) string {
	if n := Nearest(word, candidates); n != "" {
		return ` (did you mean "` + n + `"?)`
	}
	return ""
}
