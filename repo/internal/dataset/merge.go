package dataset

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"reflect"
	"strings"

	"github.com/chunkvc/chunkvc/formats/zarr"
)

// Conflict is a file of a store that a three-way merge cannot settle.
type Conflict struct {
	Path   string
	Reason string
}

// Pick is the side a person chose for a file both sides changed.
type Pick int

// Picks.
const (
	PickNone   Pick = iota // leave it a conflict
	PickOurs               // keep ours
	PickTheirs             // take theirs
)

// mergeStep is what a merge does with one file: take theirs (write it,
// or remove it when theirs has none), or keep ours.
type mergeStep struct {
	path   string
	theirs target
	remove bool
}

// Merge makes dir, which holds the store ours (as the caller has
// checked), hold the three-way merge of base, ours and theirs, file by
// file: a file one side left as the base takes the other side's bytes
// (or goes, if that side removed it); a file both sides changed the same
// way is kept; a file both changed differently is a conflict. A chunk
// file is a chunk, so two sides that wrote different chunks of one array
// merge; a shard file merges whole. An array's metadata document that one
// side changed while the other changed the array's chunks merges only
// when it changed nothing but the shape (an append, a resize): anything
// else (dtype, chunk grid, codecs, fill value) would give the other
// side's chunks a meaning they were not written with. Consolidated
// metadata (.zmetadata) is a document like the others. pick (when not
// nil) settles conflicts a person has decided, by store path. With a
// conflict, dir is left untouched; else it returns how many files it
// wrote.
func Merge(dir string, base, ours, theirs Version, fetch Fetch, pick func(path string) Pick) ([]Conflict, int, error) {
	var sides [3]map[string]target
	for i, v := range []Version{base, ours, theirs} {
		if i == 0 && v.Layout == nil {
			sides[0] = map[string]target{}
			continue
		}
		t, err := targets(v)
		if err != nil {
			return nil, 0, fmt.Errorf("%s version: %w", [3]string{"base", "our", "their"}[i], err)
		}
		sides[i] = t
	}
	if pick == nil {
		pick = func(string) Pick { return PickNone }
	}
	steps, conflicts := plan3(sides, pick)
	for _, c := range docConflicts(sides, steps) {
		if pick(c.Path) == PickNone {
			conflicts = append(conflicts, c)
		}
	}
	if len(conflicts) > 0 {
		return conflicts, 0, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	w := &writer{root: root, fetch: fetch}
	written := 0
	for _, s := range steps {
		if s.remove {
			if err := root.Remove(s.path); err != nil && !os.IsNotExist(err) {
				return nil, written, err
			}
			removeEmptyParents(root, s.path)
			continue
		}
		if err := w.file(s.path, s.theirs); err != nil {
			return nil, written, err
		}
		written++
	}
	return nil, written, nil
}

// plan3 decides every file of the three sides (base, ours, theirs).
func plan3(sides [3]map[string]target, pick func(string) Pick) ([]mergeStep, []Conflict) {
	all := map[string]target{}
	for _, s := range sides {
		for p, t := range s {
			all[p] = t
		}
	}
	var steps []mergeStep
	var conflicts []Conflict
	for _, p := range sortedKeys(all) {
		b, inB := sides[0][p]
		o, inO := sides[1][p]
		t, inT := sides[2][p]
		same := func(x target, inX bool, y target, inY bool) bool { return inX == inY && (!inX || x.sum == y.sum) }
		switch {
		case same(o, inO, t, inT), same(b, inB, t, inT):
			// both alike, or theirs left it as it was: ours holds
		case same(b, inB, o, inO), pick(p) == PickTheirs:
			steps = append(steps, mergeStep{path: p, theirs: t, remove: !inT})
		case pick(p) == PickOurs:
		case !inO:
			conflicts = append(conflicts, Conflict{p, "deleted by ours, changed by theirs"})
		case !inT:
			conflicts = append(conflicts, Conflict{p, "changed by ours, deleted by theirs"})
		case !inB:
			conflicts = append(conflicts, Conflict{p, "added by both sides with different bytes"})
		default:
			conflicts = append(conflicts, Conflict{p, "changed on both sides"})
		}
	}
	return steps, conflicts
}

// docConflicts finds the array documents one side changed beyond their
// shape while the other side changed that array's chunks (or the
// reverse).
func docConflicts(sides [3]map[string]target, steps []mergeStep) []Conflict {
	taken := map[string]bool{}
	for _, s := range steps {
		taken[s.path] = true
	}
	// changed reports whether side i changed some non-document file
	// under dir from the base.
	changed := func(i int, dir string) bool {
		for p, t := range sides[i] {
			if b, ok := sides[0][p]; strings.HasPrefix(p, dir) && !t.doc && (!ok || b.sum != t.sum) {
				return true
			}
		}
		for p := range sides[0] {
			if _, ok := sides[i][p]; strings.HasPrefix(p, dir) && !ok {
				return true
			}
		}
		return false
	}
	var out []Conflict
	for _, p := range sortedKeys(sides[1]) {
		name := path.Base(p)
		if name != zarr.ZArray && name != zarr.ZarrJSON {
			continue
		}
		b, inB := sides[0][p]
		if !inB {
			continue
		}
		dir := strings.TrimPrefix(path.Dir(p)+"/", "./")
		// The side whose document differs from the base, and the other.
		docSide, other := 1, 2
		if taken[p] {
			docSide, other = 2, 1
		}
		d, ok := sides[docSide][p]
		if o, inO := sides[other][p]; !ok || d.sum == b.sum || inO && o.sum == d.sum || !changed(other, dir) {
			continue
		}
		if name == zarr.ZarrJSON && !isArrayDoc(d.inline()) {
			continue // a group's: its attributes say nothing of chunks
		}
		if !shapeOnly(b.inline(), d.inline()) {
			who := [3]string{"", "ours", "theirs"}
			out = append(out, Conflict{p, fmt.Sprintf("array metadata changed by %s beyond its shape while %s changed the array's chunks", who[docSide], who[other])})
		}
	}
	return out
}

// inline returns a document's bytes (documents are inline in layouts).
func (t target) inline() []byte {
	var b []byte
	for _, pc := range t.pieces() {
		b = append(b, pc.Inline...)
	}
	return b
}

// shapeOnly reports whether two array documents (JSON) differ at most in
// their "shape".
func shapeOnly(a, b []byte) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	delete(x, "shape")
	delete(y, "shape")
	return reflect.DeepEqual(x, y)
}

// isArrayDoc reports whether a v3 zarr.json describes an array.
func isArrayDoc(b []byte) bool {
	var n struct {
		NodeType string `json:"node_type"`
	}
	return json.Unmarshal(b, &n) == nil && n.NodeType == "array"
}
