package kube

import "sort"

func sortStrings(s []string) { sort.Strings(s) }
