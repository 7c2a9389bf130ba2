package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Version is a native protocol version, without the direction bit.
type Version uint8

// The versions Sediment speaks.
const (
	V3 Version = 3
	V4 Version = 4
	// V5 wraps envelopes (the frames of v3 and v4) in checksummed
	// segments once STARTUP is answered; see segment.go.
	V5 Version = 5

	// MinVersion and MaxVersion bound the supported versions.
	MinVersion = V3
	MaxVersion = V5
)

// SupportedVersions is what SUPPORTED lists as PROTOCOL_VERSIONS.
var SupportedVersions = []string{"3/v3", "4/v4", "5/v5"}

// Supported reports whether Sediment speaks v.
func (v Version) Supported() bool { return v >= MinVersion && v <= MaxVersion }

// headerSize returns the length of v's frame header: v1 and v2 had a
// one-byte stream ID.
func (v Version) headerSize() int {
	if v == 1 || v == 2 {
		return 8
	}
	return HeaderSize
}

// HeaderSize is the length of a frame header (a v5 envelope header) from
// v3 on.
const HeaderSize = 9

// directionBit is set in the version byte of responses.
const directionBit = 0x80

// Flags are the flags of a frame header.
type Flags uint8

// The header flags.
const (
	// FlagCompression: the body is compressed with the algorithm agreed
	// in STARTUP.
	FlagCompression Flags = 0x01
	// FlagTracing: on a request, trace it; on a response, the body starts
	// with a [uuid] tracing session ID.
	FlagTracing Flags = 0x02
	// FlagCustomPayload: the body starts (after any tracing ID) with a
	// [bytes map] of custom payload.
	FlagCustomPayload Flags = 0x04
	// FlagWarning: a response body starts (after any tracing ID) with a
	// [string list] of warnings.
	FlagWarning Flags = 0x08
)

// Opcode says what a frame's body is.
type Opcode uint8

// The opcodes.
const (
	OpError        Opcode = 0x00
	OpStartup      Opcode = 0x01
	OpReady        Opcode = 0x02
	OpAuthenticate Opcode = 0x03
	// OpCredentials was v1's login request; it is known only to be
	// refused as Cassandra refuses it.
	OpCredentials   Opcode = 0x04
	OpOptions       Opcode = 0x05
	OpSupported     Opcode = 0x06
	OpQuery         Opcode = 0x07
	OpResult        Opcode = 0x08
	OpPrepare       Opcode = 0x09
	OpExecute       Opcode = 0x0A
	OpRegister      Opcode = 0x0B
	OpEvent         Opcode = 0x0C
	OpBatch         Opcode = 0x0D
	OpAuthChallenge Opcode = 0x0E
	OpAuthResponse  Opcode = 0x0F
	OpAuthSuccess   Opcode = 0x10
)

var opNames = map[Opcode]string{
	OpError: "ERROR", OpStartup: "STARTUP", OpReady: "READY", OpAuthenticate: "AUTHENTICATE", OpCredentials: "CREDENTIALS",
	OpOptions: "OPTIONS", OpSupported: "SUPPORTED", OpQuery: "QUERY", OpResult: "RESULT",
	OpPrepare: "PREPARE", OpExecute: "EXECUTE", OpRegister: "REGISTER", OpEvent: "EVENT",
	OpBatch: "BATCH", OpAuthChallenge: "AUTH_CHALLENGE", OpAuthResponse: "AUTH_RESPONSE",
	OpAuthSuccess: "AUTH_SUCCESS",
}

// String returns the opcode's name in the spec, such as "QUERY".
func (o Opcode) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return fmt.Sprintf("0x%02X", uint8(o))
}

// requestOps are the opcodes a client sends; the other named ones are the
// server's.
var requestOps = map[Opcode]bool{
	OpStartup: true, OpCredentials: true, OpOptions: true, OpQuery: true, OpPrepare: true,
	OpExecute: true, OpRegister: true, OpBatch: true, OpAuthResponse: true,
}

// IsRequest reports whether o is an opcode clients send.
func (o Opcode) IsRequest() bool { return requestOps[o] }

// CheckOpcode returns the Protocol error Cassandra sends for a frame
// whose opcode is unknown, or is known but travels the other way (a
// response opcode without the direction bit, a request opcode with it);
// nil when o fits the direction.
func CheckOpcode(o Opcode, response bool) *Error {
	if _, ok := opNames[o]; !ok {
		return Errorf(CodeProtocol, "Unknown opcode %d", uint8(o))
	}
	if o.IsRequest() != response {
		return nil
	}
	dirs := [2]string{"REQUEST", "RESPONSE"}
	want, got := dirs[1], dirs[0]
	if response {
		want, got = got, want
	}
	return Errorf(CodeProtocol, "Wrong protocol direction (expected %s, got %s) for opcode %d (%v)", want, got, uint8(o), o)
}

// Header is a frame header.
type Header struct {
	Version Version
	// Response is the direction bit of the version byte.
	Response bool
	Flags    Flags
	// Stream is echoed in a request's answer; events use -1.
	Stream int16
	Opcode Opcode
	// Length is the length of the body.
	Length uint32
}

// Frame is a header and its body, still compressed if the header says so.
type Frame struct {
	Header
	Body []byte
}

// EventStream is the stream of EVENT frames.
const EventStream int16 = -1

// ErrFrameTooLarge matches a FrameTooLargeError.
var ErrFrameTooLarge = errors.New("wire: frame too large")

// FrameTooLargeError reports a frame longer than the limit, header
// included, as Cassandra's native_transport_max_frame_size counts. Its
// body has not been read: the reader may skip Header.Length bytes and go on.
// In v5 the limit bounds an envelope, whatever segments carry it.
type FrameTooLargeError struct {
	Header Header
	Max    int
}

// Len is the length of the whole frame.
func (e *FrameTooLargeError) Len() int64 {
	return int64(e.Header.Version.headerSize()) + int64(e.Header.Length)
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("Request is too big: length %d exceeds maximum allowed length %d.", e.Len(), e.Max)
}

// InvalidError returns the error the client is sent: Cassandra answers a
// frame too large with Invalid, not Protocol error, and goes on with the
// connection.
func (e *FrameTooLargeError) InvalidError() *Error {
	return &Error{Code: CodeInvalid, Message: e.Error()}
}

// Is makes errors.Is(err, ErrFrameTooLarge) hold.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// ErrUnsupportedVersion matches an UnsupportedVersionError.
var ErrUnsupportedVersion = errors.New("wire: unsupported protocol version")

// UnsupportedVersionError reports a frame in a version Sediment does not
// speak. Header holds what could be read of the header in the client's
// version, so the answer can be framed in a version the client reads; the
// body has not been read.
type UnsupportedVersionError struct {
	Header Header
}

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("Invalid or unsupported protocol version (%d); supported versions are (3/v3, 4/v4, 5/v5)", e.Header.Version)
}

// Is makes errors.Is(err, ErrUnsupportedVersion) hold.
func (e *UnsupportedVersionError) Is(target error) bool { return target == ErrUnsupportedVersion }

// ProtocolError returns the error the client is sent: a Protocol error
// worded as Cassandra words it, so drivers recognise it and step down.
func (e *UnsupportedVersionError) ProtocolError() *Error {
	return &Error{Code: CodeProtocol, Message: e.Error()}
}

// ReplyVersion is the version to frame the answer in. Clients of v1 and
// v2 read their own version's header, so they get it back; for a version
// whose framing is unknown (v6 and later, vendor versions) the answer is
// v4, whose header every driver reads before STARTUP: gocql steps down
// to the version of the error frame when the message does not tell it a
// number it knows.
func (e *UnsupportedVersionError) ReplyVersion() Version {
	if v := e.Header.Version; v >= 1 && v <= 2 {
		return v
	}
	return V4
}

// ReadFrame reads one frame. It checks the header before allocating the
// body: a frame (header and body) longer than maxFrame gives a
// *FrameTooLargeError, a version
// other than v3, v4 or v5 an *UnsupportedVersionError, both with the body left
// unread. Any other error means the stream is out of step. From v5 the
// envelopes after STARTUP are read the same way from a SegmentReader.
func ReadFrame(r io.Reader, maxFrame int) (*Frame, error) {
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(r, hb[:1]); err != nil {
		return nil, err
	}
	v := Version(hb[0] &^ directionBit)
	n := v.headerSize()
	if _, err := io.ReadFull(r, hb[1:n]); err != nil {
		return nil, unexpectedEOF(err)
	}
	h := Header{Version: v, Response: hb[0]&directionBit != 0, Flags: Flags(hb[1])}
	if n == 8 {
		h.Stream = int16(int8(hb[2]))
		h.Opcode = Opcode(hb[3])
		h.Length = binary.BigEndian.Uint32(hb[4:8])
	} else {
		h.Stream = int16(binary.BigEndian.Uint16(hb[2:4]))
		h.Opcode = Opcode(hb[4])
		h.Length = binary.BigEndian.Uint32(hb[5:9])
	}
	if !v.Supported() {
		return nil, &UnsupportedVersionError{Header: h}
	}
	if int64(n)+int64(h.Length) > int64(maxFrame) {
		return nil, &FrameTooLargeError{Header: h, Max: maxFrame}
	}
	f := &Frame{Header: h, Body: make([]byte, h.Length)}
	if _, err := io.ReadFull(r, f.Body); err != nil {
		return nil, unexpectedEOF(err)
	}
	return f, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AppendHeader appends h in its version's layout. The caller back-patches
// the length with PatchLength once the body is appended.
func AppendHeader(dst []byte, h Header) []byte {
	b := byte(h.Version)
	if h.Response {
		b |= directionBit
	}
	if h.Version.headerSize() == 8 {
		dst = append(dst, b, byte(h.Flags), byte(int8(h.Stream)), byte(h.Opcode))
	} else {
		dst = append(dst, b, byte(h.Flags))
		dst = binary.BigEndian.AppendUint16(dst, uint16(h.Stream))
		dst = append(dst, byte(h.Opcode))
	}
	return binary.BigEndian.AppendUint32(dst, h.Length)
}

// PatchLength sets the length field of the header that starts frame, to
// the bytes that follow it.
func PatchLength(frame []byte) {
	n := Version(frame[0] &^ directionBit).headerSize()
	binary.BigEndian.PutUint32(frame[n-4:n], uint32(len(frame)-n))
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	return slices.Sorted(maps.Keys(m))
}
