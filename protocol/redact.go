package protocol

import "net/url"

// RedactURL is raw with the password of its user information replaced by
// "xxxxx" (url.URL.Redacted), for anything a person reads: an upstream
// URL may carry credentials, which smith never prints. raw is returned as
// it is when it has no password or does not parse.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}
