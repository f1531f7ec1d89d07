package desired

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/driftwatch/driftwatch/internal/flux/build"
)

// ReadDir reads a checkout of a source (agent lint --flux-source) into an FS
// as source-controller would serve it: every regular file below root, with
// the artifact limits (l, defaults for zero fields); symlinks, devices and
// the .git folder are left out. A limit broken is a FetchError with reason
// limit.
func ReadDir(root string, l Limits) (build.FS, error) {
	l = l.withDefaults()
	out := build.FS{}
	var total int64
	entries := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		entries++
		if entries > l.Entries {
			return limitErr("the folder holds more than %d files", l.Entries)
		}
		if !d.Type().IsRegular() {
			return nil // symlinks, devices: source-controller's archive holds regular files
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > l.File {
			return limitErr("a file is larger than %d bytes", l.File)
		}
		if total += info.Size(); total > l.Inflated {
			return limitErr("the folder holds more than %d bytes", l.Inflated)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out[path.Clean(filepath.ToSlash(rel))] = b
		return nil
	})
	if err != nil {
		out.Wipe()
		var fe *FetchError
		if errors.As(err, &fe) {
			return nil, fe
		}
		return nil, fmt.Errorf("read %s: %w", root, err)
	}
	return out, nil
}
