package finding

// Panel is a finding family's stat on the dashboards' overview ("Findings by
// class"): a title and a PromQL expression with one %s for the selector.
type Panel struct {
	Title string
	Expr  string
}
