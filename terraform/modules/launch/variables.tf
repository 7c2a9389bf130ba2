variable "name" {
  description = "Name of the launch template."
  type        = string

  validation {
    condition     = can(regex("^[a-zA-Z0-9()./_-]{3,125}$", var.name))
    error_message = "name must be 3 to 125 letters, digits or ()./_- characters."
  }
}

variable "role" {
  description = "Sediment role the instances run (-target)."
  type        = string

  validation {
    condition     = contains(["frontend", "ingest", "compactor"], var.role)
    error_message = "role must be frontend, ingest or compactor."
  }
}

variable "ami_id" {
  description = "AMI of the instances: Amazon Linux 2023 or another systemd distribution with curl and the AWS CLI."
  type        = string

  validation {
    condition     = can(regex("^ami-[0-9a-f]+$", var.ami_id))
    error_message = "ami_id must look like ami-0123abcd."
  }
}

variable "instance_type" {
  description = "EC2 instance type."
  type        = string
}

variable "instance_profile_name" {
  description = "Instance profile that gives the instances their role's bucket access."
  type        = string
}

variable "security_group_ids" {
  description = "Security groups of the instances."
  type        = list(string)

  validation {
    condition     = length(var.security_group_ids) > 0
    error_message = "security_group_ids must list at least one security group."
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
  description = "SHA-256 of the binary, checked before it runs; null skips the check."
  type        = string
  default     = null

  validation {
    condition     = var.sediment_binary_sha256 == null || can(regex("^[0-9a-f]{64}$", var.sediment_binary_sha256))
    error_message = "sediment_binary_sha256 must be 64 lowercase hex digits."
  }
}

variable "flags" {
  description = "Flags of sediment (without the leading '-'), for example { \"objectstore.bucket\" = \"b\" }; -target, -data.dir and -node.address are set by the module."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for k, v in var.flags : can(regex("^[a-z][a-z0-9.-]*$", k)) && !can(regex("[\\s'\"$`\\\\]", v))])
    error_message = "flags keys must be flag names and values must hold no whitespace, quotes, '$', '`' or '\\'."
  }
}

variable "node_port" {
  description = "Port announced with the instance's private IP as -node.address: the ingest RPC port for ingest nodes, the HTTP port otherwise."
  type        = number

  validation {
    condition     = var.node_port > 1024 && var.node_port < 65536
    error_message = "node_port must be between 1025 and 65535."
  }
}

variable "boot_script" {
  description = "Bash run at boot before sediment starts, as root, with PRIVATE_IP, INSTANCE_ID and REGION set; it must leave /var/lib/sediment ready (for example with a volume mounted there)."
  type        = string
  default     = ""
}

variable "root_volume_size_gib" {
  description = "Size of the root volume in GiB."
  type        = number
  default     = 20

  validation {
    condition     = var.root_volume_size_gib >= 8
    error_message = "root_volume_size_gib must be at least 8."
  }
}

variable "kms_key_arn" {
  description = "KMS key that encrypts the root volume; null uses the account's default EBS key."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN."
  }
}

variable "tags" {
  description = "Tags of the launch template and of the instances and volumes it launches."
  type        = map(string)
  default     = {}
}
