package objectstore

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// Backends.
const (
	BackendFile  = "file"
	BackendS3    = "s3"
	BackendMinIO = "minio"
)

// S3's limits on multipart uploads.
const (
	minPartSize = 5 << 20
	maxPartSize = 5 << 30
)

// Server-side encryption settings (Config.SSE).
const (
	SSEOff = "none"
	SSES3  = "s3"
	SSEKMS = "kms"
)

// Config selects and configures a backend.
type Config struct {
	Backend string `yaml:"backend"`
	// Bucket and Prefix place the store in a bucket; many clusters can
	// share one bucket under different prefixes.
	Bucket string `yaml:"bucket"`
	Prefix string `yaml:"prefix"`

	// Dir is the file backend's directory.
	Dir string `yaml:"dir"`

	// Endpoint is host[:port] or a URL; empty means AWS (s3 backend only).
	Endpoint        string `yaml:"endpoint"`
	Region          string `yaml:"region"`
	AccessKeyID     string `yaml:"access_key_id"`
	SecretAccessKey string `yaml:"secret_access_key"`
	PathStyle       bool   `yaml:"path_style"`
	// Insecure talks plain HTTP to the endpoint.
	Insecure bool `yaml:"insecure"`
	// SSE asks the bucket to encrypt each object it stores (s3, minio):
	// SSEOff leaves it to the bucket's default, SSES3 uses keys the service
	// manages (AES256), SSEKMS a KMS key: SSEKMSKeyID, or the service's
	// default KMS key when empty.
	SSE         string `yaml:"sse"`
	SSEKMSKeyID string `yaml:"sse_kms_key_id"`

	// PartSize is the size of each part of a streaming upload; smaller
	// uploads are sent in one request.
	PartSize int64 `yaml:"part_size"`
	// UploadConcurrency is how many parts of one upload are sent at once.
	UploadConcurrency int `yaml:"upload_concurrency"`
	// ListPageSize is the number of keys asked for per list request.
	ListPageSize int `yaml:"list_page_size"`
	// Timeout bounds each operation, retries included (for a Writer, each
	// part); for reads it runs until the body is closed.
	Timeout time.Duration `yaml:"timeout"`
	Retry   RetryConfig   `yaml:"retry"`
}

// RetryConfig sets how transient failures are retried.
type RetryConfig struct {
	MaxRetries int           `yaml:"max_retries"`
	MinBackoff time.Duration `yaml:"min_backoff"`
	MaxBackoff time.Duration `yaml:"max_backoff"`
}

// RegisterFlags registers the configuration's flags, with their defaults, in
// f under the prefix "objectstore.".
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	const p = "objectstore."
	f.StringVar(&c.Backend, p+"backend", BackendFile, "Object store backend: file, s3 or minio.")
	f.StringVar(&c.Bucket, p+"bucket", "", "Bucket name (s3, minio).")
	f.StringVar(&c.Prefix, p+"prefix", "", "Key prefix under which this cluster keeps its objects.")
	f.StringVar(&c.Dir, p+"dir", "", "Directory of the file backend (default <data.dir>/objects).")
	f.StringVar(&c.Endpoint, p+"endpoint", "", "Endpoint host[:port] or URL (s3: empty means AWS; minio: required).")
	f.StringVar(&c.Region, p+"region", "", "Region (s3: empty means from the AWS environment, else us-east-1).")
	f.StringVar(&c.AccessKeyID, p+"access-key-id", "", "Access key ID; empty means the default credential chain (environment, shared files, IAM).")
	f.StringVar(&c.SecretAccessKey, p+"secret-access-key", "", "Secret access key; pass it as $SEDIMENT_OBJECTSTORE_SECRET_ACCESS_KEY rather than on the command line.")
	f.BoolVar(&c.PathStyle, p+"path-style", false, "Address buckets as endpoint/bucket rather than bucket.endpoint.")
	f.BoolVar(&c.Insecure, p+"insecure", false, "Use plain HTTP to the endpoint.")
	f.StringVar(&c.SSE, p+"sse", SSEOff, "Server-side encryption asked for each object (s3, minio): none (the bucket's default), s3 (SSE-S3, AES256) or kms (SSE-KMS).")
	f.StringVar(&c.SSEKMSKeyID, p+"sse-kms-key-id", "", "KMS key ID or ARN of -objectstore.sse=kms; empty: the service's default key.")
	f.Int64Var(&c.PartSize, p+"part-size", 16<<20, "Part size in bytes of multipart uploads (at least 5 MiB).")
	f.IntVar(&c.UploadConcurrency, p+"upload-concurrency", 4, "Parts of one upload sent in parallel.")
	f.IntVar(&c.ListPageSize, p+"list-page-size", 1000, "Keys per list request (1 to 1000).")
	f.DurationVar(&c.Timeout, p+"timeout", time.Minute, "Deadline of each operation, retries included (0: none).")
	f.IntVar(&c.Retry.MaxRetries, p+"retry.max-retries", 6, "Retries of a request after a transient failure.")
	f.DurationVar(&c.Retry.MinBackoff, p+"retry.min-backoff", 50*time.Millisecond, "Pause before the first retry; doubles each time.")
	f.DurationVar(&c.Retry.MaxBackoff, p+"retry.max-backoff", 5*time.Second, "Longest pause between retries.")
}

// DefaultConfig returns the configuration with every flag at its default.
func DefaultConfig() Config {
	var c Config
	c.RegisterFlags(flag.NewFlagSet("", flag.ContinueOnError))
	return c
}

// Validate reports the first problem with the configuration.
func (c *Config) Validate() error {
	switch c.Backend {
	case BackendFile:
		if c.Dir == "" {
			return errors.New("objectstore: the file backend needs -objectstore.dir")
		}
	case BackendS3, BackendMinIO:
		if c.Bucket == "" {
			return fmt.Errorf("objectstore: the %s backend needs -objectstore.bucket", c.Backend)
		}
		if c.Backend == BackendMinIO && c.Endpoint == "" {
			return errors.New("objectstore: the minio backend needs -objectstore.endpoint")
		}
		if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
			return errors.New("objectstore: set both or neither of the access key ID and secret access key")
		}
	default:
		return fmt.Errorf("objectstore: unknown backend %q (want file, s3 or minio)", c.Backend)
	}
	switch {
	case c.SSE != SSEOff && c.SSE != SSES3 && c.SSE != SSEKMS:
		return fmt.Errorf("objectstore: -objectstore.sse %q is none, s3 or kms", c.SSE)
	case c.SSE != SSEOff && c.Backend == BackendFile:
		return errors.New("objectstore: -objectstore.sse applies to the s3 and minio backends; encrypt the file backend's disk instead")
	case c.SSEKMSKeyID != "" && c.SSE != SSEKMS:
		return errors.New("objectstore: -objectstore.sse-kms-key-id needs -objectstore.sse=kms")
	}
	if _, err := prefixOf(c.Prefix); err != nil {
		return err
	}
	if c.PartSize < minPartSize || c.PartSize > maxPartSize {
		return fmt.Errorf("objectstore: part size %d is outside [5 MiB, 5 GiB]", c.PartSize)
	}
	if c.UploadConcurrency < 1 {
		return fmt.Errorf("objectstore: upload concurrency %d is below 1", c.UploadConcurrency)
	}
	if c.ListPageSize < 1 || c.ListPageSize > 1000 {
		return fmt.Errorf("objectstore: list page size %d is outside [1, 1000]", c.ListPageSize)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("objectstore: negative timeout %v", c.Timeout)
	}
	if c.Retry.MaxRetries < 0 || c.Retry.MinBackoff <= 0 || c.Retry.MaxBackoff < c.Retry.MinBackoff {
		return fmt.Errorf("objectstore: retry settings %+v need max-retries >= 0 and 0 < min-backoff <= max-backoff", c.Retry)
	}
	return nil
}
