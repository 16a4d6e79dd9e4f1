package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
)

// errStep reports a step of the check that failed.
var errStep = errors.New("step failed")

// runStep prints the step's name, then runs argv in dir with environment env
// and its output on the check's.
func runStep(name, dir string, env []string, argv ...string) error {
	say("%s", name)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s: %w", errStep, name, err)
	}
	return nil
}

// outsideEnv returns the environment of the go commands the check runs as a
// user of the release would, outside the tree: no workspace, no checksum
// database, a module cache of its own in work (writable, so that it can be
// removed), temporary files in work and the modules of the proxy in proxyDir first, then the host's
// module cache and proxy for the others.
func outsideEnv(work, proxyDir string) ([]string, error) {
	out, err := exec.Command("go", "env", "-json", "GOMODCACHE", "GOPROXY").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	var host struct{ GOMODCACHE, GOPROXY string }
	if err := json.Unmarshal(out, &host); err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	proxies := fileURL(proxyDir)
	if host.GOMODCACHE != "" {
		proxies += "," + fileURL(filepath.Join(host.GOMODCACHE, "cache", "download"))
	}
	if host.GOPROXY != "" {
		proxies += "," + host.GOPROXY
	}
	return append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-mod=mod -modcacherw -trimpath", // -trimpath: the build cache serves the next run
		"GOSUMDB=off",
		"GOPROXY="+proxies,
		"GOMODCACHE="+filepath.Join(work, "modcache"),
		"GOBIN="+filepath.Join(work, "bin"),
		"TMPDIR="+filepath.Join(work, "tmp"),
	), nil
}

// fileURL returns the file:// URL of directory dir.
func fileURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}
