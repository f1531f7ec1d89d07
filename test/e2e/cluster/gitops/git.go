package gitops

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitIsolation keeps the host's git configuration out of every git the
// stack runs (the tests' commits, the Git HTTP server, Flux's controllers).
var gitIsolation = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}

// gitRoot is the folder of the stack's repositories, given the stack's Dir.
func gitRoot(dir string) string { return filepath.Join(dir, "git") }

// GitRepo is a local git repository Argo CD reads as a file:// URL (the repo
// type Argo CD's own e2e fixtures use), inside the stack's folder; Flux reads
// it over HTTP (Flux.HTTPURL).
type GitRepo struct {
	Dir string
	// URL is file://Dir.
	URL string
}

// NewGitRepo creates an empty repository (branch main) named name among the
// repositories of the stack whose folder is dir.
func NewGitRepo(t testing.TB, dir, name string) *GitRepo {
	t.Helper()
	repo := filepath.Join(gitRoot(dir), name)
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &GitRepo{Dir: repo, URL: "file://" + repo}
	r.git(t, "init", "--quiet", "--initial-branch=main")
	return r
}

// Commit writes files (path -> content; an empty content deletes the file),
// commits them and returns the commit's SHA.
func (r *GitRepo) Commit(t testing.TB, message string, files map[string]string) string {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		if content == "" {
			if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.git(t, "add", "--all")
	r.git(t, "commit", "--quiet", "--allow-empty", "-m", message)
	return strings.TrimSpace(r.git(t, "rev-parse", "HEAD"))
}

func (r *GitRepo) git(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	cmd.Env = append(append(os.Environ(), "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@driftwatch.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@driftwatch.invalid"), gitIsolation...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
