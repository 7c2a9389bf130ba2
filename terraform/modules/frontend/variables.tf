variable "name" {
  description = "Name of the deployment; prefixes resource names."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name))
    error_message = "name must be 2 to 31 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "instance_type" {
  description = "EC2 instance type of the frontends."
  type        = string
  default     = "c7g.xlarge"
}

variable "min_size" {
  description = "Fewest frontends."
  type        = number
  default     = 2

  validation {
    condition     = var.min_size >= 1
    error_message = "min_size must be at least 1."
  }
}

variable "max_size" {
  description = "Most frontends."
  type        = number
  default     = 12

  validation {
    condition     = var.max_size >= 1 && var.max_size <= 1000
    error_message = "max_size must be between 1 and 1000."
  }
}

variable "target_cpu_percent" {
  description = "Average CPU utilization of the frontends that the target tracking policy keeps."
  type        = number
  default     = 60

  validation {
    condition     = var.target_cpu_percent >= 10 && var.target_cpu_percent <= 90
    error_message = "target_cpu_percent must be between 10 and 90."
  }
}

variable "lb_security_group_id" {
  description = "Security group of the network load balancer."
  type        = string
}

variable "lb_subnet_ids" {
  description = "Subnets of the load balancer: private ones for an internal load balancer, public ones for an internet-facing one."
  type        = list(string)

  validation {
    condition     = length(var.lb_subnet_ids) >= 1
    error_message = "lb_subnet_ids must list at least one subnet."
  }
}

variable "internal" {
  description = "Make the load balancer internal (reachable from the VPC and its peers only)."
  type        = bool
  default     = true
}

variable "cache_memory_bytes" {
  description = "Bytes of SSTable blocks each frontend keeps in memory (-cache.memory-bytes)."
  type        = number
  default     = 2147483648

  validation {
    condition     = var.cache_memory_bytes >= 0
    error_message = "cache_memory_bytes must not be negative."
  }
}

variable "cache_disk_gib" {
  description = "GiB of SSTable blocks each frontend keeps on its local disk (-cache.disk-bytes), so that a restarted frontend and a working set larger than memory read from disk, not the bucket; the root volume grows by as much. 0 turns the disk cache off."
  type        = number
  default     = 50

  validation {
    condition     = var.cache_disk_gib >= 0 && floor(var.cache_disk_gib) == var.cache_disk_gib
    error_message = "cache_disk_gib must be a whole number, not negative."
  }
}

variable "extra_flags" {
  description = "Further flags of the frontends, for example { \"cql.authenticator\" = \"password\" }."
  type        = map(string)
  default     = {}
}

variable "subnets" {
  description = "Private subnets (id, availability_zone, cidr_block) of the frontends."
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
  description = "Security group of the frontends."
  type        = string
}

variable "instance_profile_name" {
  description = "Instance profile of the frontends."
  type        = string
}

variable "ami_id" {
  description = "AMI of the frontends: Amazon Linux 2023 or another systemd distribution with curl and the AWS CLI."
  type        = string

  validation {
    condition     = can(regex("^ami-[0-9a-f]+$", var.ami_id))
    error_message = "ami_id must look like ami-0123abcd."
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

variable "flags" {
  description = "Flags of sediment shared with the other roles (object store, NATS, logging), without the leading '-'."
  type        = map(string)
  default     = {}
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
