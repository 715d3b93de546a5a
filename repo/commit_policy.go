package repo

import "context"

// policies applies the policy gates of .chunkvc/config to what this
// commit changes (after report, before anything reaches Git): a refused
// change fails the commit with ErrPolicy, naming file and rule. Chunks
// already stored stay in the store for gc to judge, as after any failed
// commit.
func (j *commitJob) policies(ctx context.Context) error {
	pols := j.r.Config.Policies
	if len(pols) == 0 {
		return nil
	}
	old := map[string]*commitFile{}
	for _, f := range j.files {
		old[f.p] = f
	}
	var changes []Change
	for _, fr := range j.res.Files {
		c := Change{Path: fr.Path}
		switch fr.Status {
		case FileAdded:
			c.New = j.current[fr.Path]
		case FileModified:
			c.New, c.Old = j.current[fr.Path], old[fr.Path].old
		case FileDeleted:
			h, ok := j.prev.find(fr.Path)
			if !ok {
				continue
			}
			m, _, err := j.r.manifestHeader(h, fr.Path)
			if err != nil {
				return err
			}
			c.Old = m
		default:
			continue
		}
		changes = append(changes, c)
	}
	opt := PolicyOptions{AllowReencode: j.opt.AllowReencode}
	vs := checkPolicies(pols, changes, j.current, opt)
	if len(vs) == 0 {
		var err error
		if vs, err = j.r.pixelChurn(ctx, pols, changes, true, opt); err != nil {
			return err
		}
	}
	if len(vs) > 0 {
		return policyError(vs)
	}
	return nil
}
