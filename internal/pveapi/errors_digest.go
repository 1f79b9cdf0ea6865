package pveapi

// msgConfigModified is PVE's answer to a config write whose digest is not the current
// config's (testdata/err_config_modified.json).
const msgConfigModified = "detected modified configuration - file changed by other user? Try again."

// IsConfigModified reports whether err refuses a config write carrying digest= because the
// config changed since that digest was read: a compare-and-swap that lost.
func IsConfigModified(err error) bool {
	return is500(err, func(m string) bool { return m == msgConfigModified })
}
