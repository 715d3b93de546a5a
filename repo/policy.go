package repo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/pattern"
)

// ErrPolicy marks a change a policy gate of .chunkvc/config refuses.
var ErrPolicy = errors.New("refused by a policy of .chunkvc/config")

// Rule is a policy gate's kind, its key in .chunkvc/config.
type Rule string

const (
	// RuleAppendOnly: matching files may be added, never changed or
	// removed ("append-only = PATTERN").
	RuleAppendOnly Rule = "append-only"
	// RuleStrictProfile: a matching raster whose encoding profile changed
	// is refused unless commit --allow-reencode ("strict-profile = PATTERN").
	RuleStrictProfile Rule = "strict-profile"
	// RuleGeoIdentical: GeoParquet geo metadata of matching files is
	// byte-identical across the files of a revision and across versions
	// ("geo-identical = PATTERN").
	RuleGeoIdentical Rule = "geo-identical"
	// RuleCRS: matching files are in the given CRS ("crs = CODE PATTERN").
	RuleCRS Rule = "crs"
)

// Policy is one gate: Rule applies to the files Pattern matches; Arg is
// the CRS code of RuleCRS.
type Policy struct {
	Rule    Rule
	Pattern string
	Arg     string
}

func (p Policy) String() string {
	if p.Arg != "" {
		return fmt.Sprintf("%s = %s %s", p.Rule, p.Arg, p.Pattern)
	}
	return fmt.Sprintf("%s = %s", p.Rule, p.Pattern)
}

// parsePolicy reads the value of a policy key.
func parsePolicy(rule Rule, v string) (Policy, error) {
	p := Policy{Rule: rule, Pattern: v}
	if rule == RuleCRS {
		code, pat, ok := strings.Cut(v, " ")
		if !ok || code == "" {
			return p, fmt.Errorf("crs = CODE PATTERN, got %q", v)
		}
		p.Arg, p.Pattern = code, strings.TrimSpace(pat)
	}
	if err := pattern.Check(p.Pattern); err != nil {
		return p, fmt.Errorf("%s: %w", rule, err)
	}
	return p, nil
}

// Change is one file a revision changed, as a policy sees it: Old nil
// when added, New nil when removed; manifests need only their headers.
type Change struct {
	Path     string
	Old, New *manifest.Manifest
}

// Violation is one change a policy refuses.
type Violation struct {
	Commit string `json:"commit,omitempty"` // the commit that made the change (check)
	Path   string `json:"path"`
	Rule   string `json:"rule"` // the config line, "append-only = lake/**"
	Reason string `json:"reason"`
}

// PolicyOptions are what a check may waive.
type PolicyOptions struct {
	AllowReencode bool // strict-profile does not apply (commit --allow-reencode)
}

// checkPolicies returns what the policies refuse of changes, the files of
// one revision against its parent; all lists every file of the new
// revision with its manifest (for geo-identical's siblings), nil when the
// caller has only the changes.
func checkPolicies(policies []Policy, changes []Change, all map[string]*manifest.Manifest, opt PolicyOptions) []Violation {
	var out []Violation
	for _, pol := range policies {
		for _, c := range changes {
			if !pattern.Match(pol.Pattern, c.Path) {
				continue
			}
			if why := pol.refuses(c, opt); why != "" {
				out = append(out, Violation{Path: c.Path, Rule: pol.String(), Reason: why})
			}
		}
		if pol.Rule == RuleGeoIdentical {
			out = append(out, geoSiblings(pol, changes, all)...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// refuses says why pol refuses change c, "" when it does not.
func (pol Policy) refuses(c Change, opt PolicyOptions) string {
	switch pol.Rule {
	case RuleAppendOnly:
		switch {
		case c.Old != nil && c.New == nil:
			return "removed; matching files may be added, never removed"
		case c.Old != nil && c.New.Digest != c.Old.Digest:
			return "changed; matching files may be added, never changed"
		}
	case RuleCRS:
		if c.New != nil {
			if got := c.New.SummaryValue("crs"); got != pol.Arg {
				if got == "" {
					got = "none"
				}
				return fmt.Sprintf("CRS is %s, the policy pins %s", got, pol.Arg)
			}
		}
	case RuleStrictProfile:
		if c.Old != nil && c.New != nil && !opt.AllowReencode {
			if ch := diff.ProfileChange(c.Old, c.New); ch != "" {
				return "encoding profile changed (" + ch + "); commit --allow-reencode if meant"
			}
		}
	case RuleGeoIdentical:
		if c.Old != nil && c.New != nil && c.Old.SummaryValue("geo") != c.New.SummaryValue("geo") {
			return fmt.Sprintf("geo metadata changed (%s → %s); it must stay byte-identical", c.Old.SummaryValue("geo"), c.New.SummaryValue("geo"))
		}
	}
	return ""
}

// geoSiblings refuses changed files whose geo metadata differs from that
// of the other matching files of the revision.
func geoSiblings(pol Policy, changes []Change, all map[string]*manifest.Manifest) []Violation {
	var paths []string
	for p := range all {
		if pattern.Match(pol.Pattern, p) && all[p].SummaryValue("geo") != "" {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var out []Violation
	for _, c := range changes {
		if c.New == nil || !pattern.Match(pol.Pattern, c.Path) {
			continue
		}
		g := c.New.SummaryValue("geo")
		for _, q := range paths {
			if q != c.Path && all[q].SummaryValue("geo") != g {
				out = append(out, Violation{Path: c.Path, Rule: pol.String(),
					Reason: fmt.Sprintf("geo metadata %s differs from sibling %s (%s)", g, q, all[q].SummaryValue("geo"))})
				break
			}
		}
	}
	return out
}

// policyError is the error of a refused change: every violation, one a
// line.
func policyError(vs []Violation) error {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  %s: %s (%s)", v.Path, v.Reason, v.Rule)
	}
	return fmt.Errorf("%w:%s", ErrPolicy, b.String())
}

// CheckRange applies the policies of .chunkvc/config at to (as that
// revision has it) to every step of the first-parent line from from
// (exclusive) to to: what a CI job runs on a pull request. A step is one
// commit against its first parent, so a change made and undone inside
// the range is still seen.
func (r *Repo) CheckRange(from, to string, opt PolicyOptions) ([]Violation, int, error) {
	end, err := r.git.Resolve(to)
	if err != nil {
		return nil, 0, err
	}
	stop := ""
	if from != "" {
		c, err := r.git.Resolve(from)
		if err != nil {
			return nil, 0, err
		}
		stop = c.Hash.String()
	}
	cfgText, _, ok, err := (&Snapshot{r: r, c: end}).GitFile(ConfigPath, maxStateFile)
	if err != nil {
		return nil, 0, err
	}
	cfg := &Config{}
	if ok {
		if cfg, err = ParseConfig(cfgText); err != nil {
			return nil, 0, fmt.Errorf("%s at %.12s: %w", ConfigPath, end.Hash, err)
		}
	}
	var out []Violation
	steps := 0
	for c := end; c != nil && c.Hash.String() != stop; steps++ {
		vs, parent, err := r.checkStep(cfg.Policies, c, opt)
		if err != nil {
			return nil, steps, err
		}
		out = append(out, vs...)
		c = parent
	}
	return out, steps, nil
}

// checkStep applies policies to commit c against its first parent (none
// for a root commit), returning the parent.
func (r *Repo) checkStep(policies []Policy, c *gitdb.Commit, opt PolicyOptions) ([]Violation, *gitdb.Commit, error) {
	var parent *gitdb.Commit
	if len(c.ParentHashes) > 0 {
		var err error
		if parent, err = r.git.ReadCommit(c.ParentHashes[0]); err != nil {
			return nil, nil, fmt.Errorf("commit %s: parent: %w", c.Hash, err)
		}
	}
	if len(policies) == 0 {
		return nil, parent, nil
	}
	now, err := r.git.ManifestBlobs(c, ManifestDir)
	if err != nil {
		return nil, nil, err
	}
	before, err := r.git.ManifestBlobs(parent, ManifestDir)
	if err != nil {
		return nil, nil, err
	}
	// Every file's header is read only when geo-identical compares
	// siblings; otherwise only what the commit changed.
	siblings := slices.ContainsFunc(policies, func(p Policy) bool { return p.Rule == RuleGeoIdentical })
	all := make(map[string]*manifest.Manifest, len(now))
	var changes []Change
	for p, h := range now {
		oh, inBefore := before[p]
		if inBefore && oh == h && !siblings {
			continue
		}
		m, _, err := r.manifestHeader(h, p)
		if err != nil {
			return nil, nil, err
		}
		all[p] = m
		switch {
		case !inBefore:
			changes = append(changes, Change{Path: p, New: m})
		case oh != h:
			om, _, err := r.manifestHeader(oh, p)
			if err != nil {
				return nil, nil, err
			}
			changes = append(changes, Change{Path: p, Old: om, New: m})
		}
	}
	for p, oh := range before {
		if _, ok := now[p]; !ok {
			om, _, err := r.manifestHeader(oh, p)
			if err != nil {
				return nil, nil, err
			}
			changes = append(changes, Change{Path: p, Old: om})
		}
	}
	vs := checkPolicies(policies, changes, all, opt)
	if len(vs) == 0 {
		var err error
		if vs, err = r.stepPixels(policies, c, parent, changes, opt); err != nil {
			return nil, nil, err
		}
	}
	for i := range vs {
		vs[i].Commit = c.Hash.String()
	}
	return vs, parent, nil
}

// checkPushed applies the policies of .chunkvc/config to every commit a
// push sends, each against its first parent and under the rules it
// holds itself (a commit from before a gate was declared is not judged
// by it), so that a change the team's rules refuse never reaches the
// remote: one made with git commit, with an older chunkvc, or past a
// config edited in the work tree only.
func (r *Repo) checkPushed(commits []*gitdb.Commit, opt PolicyOptions) error {
	var vs []Violation
	for _, c := range commits {
		cfgText, _, ok, err := (&Snapshot{r: r, c: c}).GitFile(ConfigPath, maxStateFile)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		cfg, err := ParseConfig(cfgText)
		if err != nil {
			return fmt.Errorf("%s at %.12s: %w", ConfigPath, c.Hash, err)
		}
		v, _, err := r.checkStep(cfg.Policies, c, opt)
		if err != nil {
			return err
		}
		for i := range v {
			v[i].Path = fmt.Sprintf("%s (commit %.12s)", v[i].Path, c.Hash)
		}
		vs = append(vs, v...)
	}
	if len(vs) > 0 {
		return policyError(vs)
	}
	return nil
}

// stepPixels is pixelChurn for one commit of a range: the changed TIFFs a
// strict-profile rule matches are read whole (headers were enough so
// far) from the commit and its parent.
func (r *Repo) stepPixels(policies []Policy, c, parent *gitdb.Commit, changes []Change, opt PolicyOptions) ([]Violation, error) {
	var full []Change
	for _, ch := range changes {
		if ch.Old == nil || ch.New == nil || ch.New.Format != formats.TIFF ||
			!slices.ContainsFunc(policies, func(p Policy) bool { return p.Rule == RuleStrictProfile && pattern.Match(p.Pattern, ch.Path) }) {
			continue
		}
		om, _, err := (&Snapshot{r: r, c: parent}).Manifest(ch.Path)
		if err != nil {
			return nil, err
		}
		nm, _, err := (&Snapshot{r: r, c: c}).Manifest(ch.Path)
		if err != nil {
			return nil, err
		}
		full = append(full, Change{Path: ch.Path, Old: om, New: nm})
	}
	if len(full) == 0 {
		return nil, nil
	}
	return r.pixelChurn(context.Background(), policies, full, false, opt)
}
