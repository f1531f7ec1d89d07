package collectors

// registered is the detector registry. Each detector file adds its entries with
// register from an init function, so detectors are added without editing a list.
var registered []detector

func register(d ...detector) { registered = append(registered, d...) }

func (f *Findings) registry() []detector { return append([]detector(nil), registered...) }
