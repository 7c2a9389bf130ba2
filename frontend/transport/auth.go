package transport

import (
	"context"
	"errors"
	"net"

	"github.com/sedimentdb/sediment/frontend/wire"
)

// PasswordAuthenticatorClass is the authenticator drivers are told of in
// AUTHENTICATE; they answer it with SASL PLAIN.
const PasswordAuthenticatorClass = "org.apache.cassandra.auth.PasswordAuthenticator"

// Authenticator checks passwords for password authentication.
type Authenticator interface {
	// CheckPassword reports whether password is the role's password and
	// the role may log in. A wrong password is false. An error, which the
	// client is sent, is a failure to tell (such as the catalog being
	// unreachable) or a *wire.Error refusing the login in words of its own
	// (Cassandra's for a role without LOGIN).
	// remote is the client's address, for throttling failures.
	CheckPassword(ctx context.Context, remote net.Addr, role, password string) (bool, error)
}

// ErrNoAuthenticator is returned by New for password authentication
// without an Authenticator.
var ErrNoAuthenticator = errors.New("frontend: password authentication needs an Authenticator")

// parsePlain splits a SASL PLAIN token, "authzid \0 user \0 password",
// as Cassandra's PasswordAuthenticator does: from the end, the password
// after the last NUL and the user before it; the authorization identity is
// ignored, and a third NUL is refused. Each failure is Bad credentials
// with Cassandra's message.
func parsePlain(token []byte) (user, password string, err error) {
	var pass, usr []byte
	havePass, haveUser := false, false
	end := len(token)
	for i := len(token) - 1; i >= 0; i-- {
		if token[i] != 0 {
			continue
		}
		switch {
		case !havePass:
			pass, havePass = token[i+1:end], true
		case !haveUser:
			usr, haveUser = token[i+1:end], true
		default:
			return "", "", wire.Errorf(wire.CodeBadCredentials, `Credential format error: username or password is empty or contains NUL(\0) character`)
		}
		end = i
	}
	if len(pass) == 0 {
		return "", "", wire.Errorf(wire.CodeBadCredentials, "Password must not be null")
	}
	if len(usr) == 0 {
		return "", "", wire.Errorf(wire.CodeBadCredentials, "Authentication ID must not be null")
	}
	return string(usr), string(pass), nil
}
