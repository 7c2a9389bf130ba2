variable "name" {
  description = "Name of the deployment; prefixes resource names."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name))
    error_message = "name must be 2 to 31 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "node_count" {
  description = "Ingest nodes. Each is its own Auto Scaling group of one with its own commitlog volume; node i runs in subnet i modulo their count."
  type        = number
  default     = 3

  validation {
    condition     = var.node_count >= 1 && var.node_count <= 64 && floor(var.node_count) == var.node_count
    error_message = "node_count must be a whole number between 1 and 64."
  }
}

variable "subnets" {
  description = "Private subnets (id, availability_zone, cidr_block) of the nodes."
  type = list(object({
    id                = string
    availability_zone = string
    cidr_block        = string
  }))

  validation {
    condition     = length(var.subnets) >= 1
    error_message = "subnets must list at least one subnet."
  }
}

variable "security_group_id" {
  description = "Security group of the ingest nodes."
  type        = string
}

variable "iam_role_name" {
  description = "IAM role of the ingest nodes; the module adds the right to attach their commitlog volumes."
  type        = string
}

variable "instance_profile_name" {
  description = "Instance profile of the ingest nodes."
  type        = string
}

variable "ami_id" {
  description = "AMI of the nodes: Amazon Linux 2023 or another systemd distribution with curl and the AWS CLI."
  type        = string

  validation {
    condition     = can(regex("^ami-[0-9a-f]+$", var.ami_id))
    error_message = "ami_id must look like ami-0123abcd."
  }
}

variable "instance_type" {
  description = "EC2 instance type of the nodes; -ingest.shards defaults to its vCPUs."
  type        = string
  default     = "m7g.xlarge"
}

variable "volume_size_gib" {
  description = "Size in GiB of each node's commitlog volume (the node's data directory)."
  type        = number
  default     = 100

  validation {
    condition     = var.volume_size_gib >= 8 && var.volume_size_gib <= 16384
    error_message = "volume_size_gib must be between 8 and 16384."
  }
}

variable "volume_iops" {
  description = "Provisioned IOPS of each gp3 commitlog volume: the commitlog syncs every group commit."
  type        = number
  default     = 6000

  validation {
    condition     = var.volume_iops >= 3000 && var.volume_iops <= 16000
    error_message = "volume_iops must be between 3000 and 16000 (gp3)."
  }
}

variable "volume_throughput_mibps" {
  description = "Provisioned throughput of each gp3 commitlog volume in MiB/s."
  type        = number
  default     = 250

  validation {
    condition     = var.volume_throughput_mibps >= 125 && var.volume_throughput_mibps <= 1000
    error_message = "volume_throughput_mibps must be between 125 and 1000 (gp3)."
  }
}

variable "kms_key_arn" {
  description = "KMS key that encrypts the volumes; null uses the account's default EBS key."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN."
  }
}

variable "sediment_binary_s3_uri" {
  description = "Where the sediment binary (a static Linux build for the AMI's architecture) is in S3, as s3://bucket/key: instances copy it at boot with their instance role, which needs s3:GetObject on it (the iam module grants it under <prefix>/releases/). No presigned URL: nothing expires."
  type        = string

  validation {
    condition     = can(regex("^s3://[a-z0-9][a-z0-9.-]+/.+", var.sediment_binary_s3_uri))
    error_message = "sediment_binary_s3_uri must look like s3://bucket/key."
  }
}

variable "sediment_binary_sha256" {
  description = "SHA-256 of the binary; null skips the check."
  type        = string
  default     = null

  validation {
    condition     = var.sediment_binary_sha256 == null || can(regex("^[0-9a-f]{64}$", var.sediment_binary_sha256))
    error_message = "sediment_binary_sha256 must be 64 lowercase hex digits."
  }
}

variable "rpc_port" {
  description = "Port of the ingest RPC (-ingest.rpc-address)."
  type        = number
  default     = 9190

  validation {
    condition     = var.rpc_port > 1024 && var.rpc_port < 65536
    error_message = "rpc_port must be between 1025 and 65535."
  }
}

variable "flags" {
  description = "Flags of sediment shared with the other roles (object store, NATS, logging), without the leading '-'."
  type        = map(string)
  default     = {}
}

variable "extra_flags" {
  description = "Further flags of the ingest nodes, for example { \"ingest.commitlog.sync-mode\" = \"periodic\" }."
  type        = map(string)
  default     = {}
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
