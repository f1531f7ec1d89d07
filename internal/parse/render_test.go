package parse

import "fmt"

func sprintAll(v any) string { return fmt.Sprintf("%#v", v) }
