//go:build !linux

package agent

import "errors"

// returnExecutablePages is Linux only (madvise(MADV_PAGEOUT)).
func returnExecutablePages() (exePages, error) {
	return exePages{}, errors.New("returning the executable's pages is Linux only")
}

type exePages struct {
	Mappings, Passes                  int
	RssFileBeforeKiB, RssFileAfterKiB int64
	PmdMappedKiB                      int64
}

func pageoutUnsupported(error) bool { return true }
