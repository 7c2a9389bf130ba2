variable "region" {
  description = "AWS region to deploy into."
  type        = string
  default     = "us-east-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]$", var.region))
    error_message = "region must be an AWS region name such as us-east-1."
  }
}

variable "name" {
  description = "Name of the deployment: prefixes resources, names the NATS cluster and the manifest's KV buckets (-manifest.cluster-name)."
  type        = string
  default     = "sediment"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name))
    error_message = "name must be 2 to 31 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "bucket_name" {
  description = "Name of the S3 bucket to create; globally unique."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be a valid S3 bucket name."
  }
}

variable "bucket_prefix" {
  description = "Key prefix of the cluster's objects in the bucket (-objectstore.prefix)."
  type        = string
  default     = "sediment"

  validation {
    condition     = can(regex("^([a-zA-Z0-9!_.*'()-]+(/[a-zA-Z0-9!_.*'()-]+)*)?$", var.bucket_prefix))
    error_message = "bucket_prefix must be empty or '/'-separated key segments, without leading or trailing '/'."
  }
}

variable "kms_key_arn" {
  description = "KMS key for the bucket and the volumes; null uses SSE-S3 for the bucket and the default EBS key for the volumes."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN."
  }
}

variable "vpc_id" {
  description = "Existing VPC to deploy into; null creates one."
  type        = string
  default     = null
}

variable "private_subnet_ids" {
  description = "Private subnets of the existing VPC (with vpc_id)."
  type        = list(string)
  default     = []
}

variable "public_subnet_ids" {
  description = "Public subnets of the existing VPC, for an internet-facing load balancer (with vpc_id)."
  type        = list(string)
  default     = []
}

variable "cql_allowed_cidrs" {
  description = "IPv4 CIDR blocks allowed to connect to CQL on the load balancer."
  type        = list(string)
  default     = []
}

variable "cql_internet_facing" {
  description = "Put the load balancer in the public subnets with a public DNS name; otherwise it is internal."
  type        = bool
  default     = false
}

variable "cql_open_to_internet" {
  description = "Open the load balancer's CQL port to 0.0.0.0/0; use only with password authentication and TLS."
  type        = bool
  default     = false
}

variable "ami_id" {
  description = "AMI of every instance; null picks the latest Amazon Linux 2023 for the architecture."
  type        = string
  default     = null

  validation {
    condition     = var.ami_id == null || can(regex("^ami-[0-9a-f]+$", var.ami_id))
    error_message = "ami_id must look like ami-0123abcd."
  }
}

variable "architecture" {
  description = "CPU architecture of the instances and of the binaries."
  type        = string
  default     = "arm64"

  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}

variable "sediment_binary_path" {
  description = "Local path of a static Linux sediment binary for the architecture (GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build ./cmd/sediment). Terraform uploads it to the bucket under <bucket_prefix>/releases/sediment-<sha256>; the instances copy it from there with their instance role and check its SHA-256. A new binary is a new key, hence new launch template versions and an instance refresh of every group."
  type        = string
}

variable "nats_server_archive_path" {
  description = "Local path of the nats-server release tarball for the architecture (nats-server-v<version>-linux-arm64.tar.gz, the project's Makefile pins the version the tests use). Uploaded to <bucket_prefix>/releases/; the NATS servers copy it from there, not from the internet."
  type        = string

  validation {
    condition     = endswith(var.nats_server_archive_path, ".tar.gz")
    error_message = "nats_server_archive_path must name a .tar.gz."
  }
}

variable "alarm_actions" {
  description = "ARNs notified when an alarm fires or clears (for example an SNS topic); empty: the alarms only show in CloudWatch."
  type        = list(string)
  default     = []
}

variable "ingest_nodes" {
  description = "Number of ingest nodes."
  type        = number
  default     = 3

  validation {
    condition     = var.ingest_nodes >= 1 && var.ingest_nodes <= 64
    error_message = "ingest_nodes must be between 1 and 64."
  }
}

variable "frontend_min" {
  description = "Fewest frontends."
  type        = number
  default     = 2

  validation {
    condition     = var.frontend_min >= 1
    error_message = "frontend_min must be at least 1."
  }
}

variable "frontend_max" {
  description = "Most frontends."
  type        = number
  default     = 12

  validation {
    condition     = var.frontend_max >= 1
    error_message = "frontend_max must be at least 1."
  }
}

variable "compactor_min" {
  description = "Fewest compactors."
  type        = number
  default     = 1

  validation {
    condition     = var.compactor_min >= 1
    error_message = "compactor_min must be at least 1."
  }
}

variable "compactor_max" {
  description = "Most compactors."
  type        = number
  default     = 16

  validation {
    condition     = var.compactor_max >= 1
    error_message = "compactor_max must be at least 1."
  }
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
