package collectors

// registered is the detector registry. Each detector file adds its entries with
// register from an init function, so detectors are added without editing a list.
// Registering names the detector on the families it emits (finding.Family.Detector).
var registered []detector

func register(ds ...detector) {
	for _, d := range ds {
		for _, desc := range d.families {
			familyOf[desc].Detector = d.name
		}
	}
	registered = append(registered, ds...)
}

func (f *Findings) registry() []detector { return append([]detector(nil), registered...) }
