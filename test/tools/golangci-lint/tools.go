//go:build tools

// Package tools pins golangci-lint v2 for `make test` (test/tools/build.sh
// builds it into the tool cache). Its dependencies never touch the agent's
// go.mod.
package tools

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
