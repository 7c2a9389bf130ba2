package frontend

import (
	"bytes"
	"context"
	"errors"

	"github.com/sedimentdb/sediment/frontend/wire"
)

// PasswordAuthenticatorClass is the authenticator drivers are told of in
// AUTHENTICATE; they answer it with SASL PLAIN.
const PasswordAuthenticatorClass = "org.apache.cassandra.auth.PasswordAuthenticator"

// Authenticator checks passwords for password authentication.
type Authenticator interface {
	// CheckPassword reports whether password is the role's password and
	// the role may log in. An error is a failure to tell (such as the
	// catalog being unreachable), not a wrong password.
	CheckPassword(ctx context.Context, role, password string) (bool, error)
}

// ErrNoAuthenticator is returned by New for password authentication
// without an Authenticator.
var ErrNoAuthenticator = errors.New("frontend: password authentication needs an Authenticator")

// parsePlain splits a SASL PLAIN token, "authzid \0 user \0 password";
// the authorization identity is ignored, as Cassandra does.
func parsePlain(token []byte) (user, password string, err error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return "", "", wire.Errorf(wire.CodeProtocol, "Invalid SASL PLAIN token")
	}
	if len(parts[1]) == 0 {
		return "", "", wire.Errorf(wire.CodeBadCredentials, "Authentication ID must not be null")
	}
	if len(parts[2]) == 0 {
		return "", "", wire.Errorf(wire.CodeBadCredentials, "Password must not be null")
	}
	return string(parts[1]), string(parts[2]), nil
}
