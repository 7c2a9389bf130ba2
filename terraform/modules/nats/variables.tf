variable "name" {
  description = "Name of the deployment; prefixes resource names and is the NATS cluster name."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name))
    error_message = "name must be 2 to 31 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "subnets" {
  description = "Private subnets (id, availability_zone, cidr_block); server i runs in subnet i modulo their count, so three zones give one server per zone."
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

variable "host_number" {
  description = "Host number, within its subnet's CIDR block, of the fixed private IP of server 0; server i takes host_number + i. The routes between the servers name these addresses."
  type        = number
  default     = 10

  validation {
    condition     = var.host_number >= 4 && var.host_number <= 250
    error_message = "host_number must be between 4 and 250 (AWS reserves the first four addresses of a subnet)."
  }
}

variable "security_group_id" {
  description = "Security group of the NATS servers."
  type        = string
}

variable "ami_id" {
  description = "AMI of the servers: Amazon Linux 2023 or another systemd distribution with curl and tar."
  type        = string

  validation {
    condition     = can(regex("^ami-[0-9a-f]+$", var.ami_id))
    error_message = "ami_id must look like ami-0123abcd."
  }
}

variable "instance_type" {
  description = "EC2 instance type of the servers."
  type        = string
  default     = "m7g.large"
}

variable "nats_server_s3_uri" {
  description = "Where the nats-server release tarball (.tar.gz with nats-server inside, for the AMI's architecture) is in S3, as s3://bucket/key: the servers copy it at boot with their instance profile (instance_profile_name, which then needs s3:GetObject on it: the iam module's nats profile has it). Nothing is downloaded from the internet."
  type        = string

  validation {
    condition     = can(regex("^s3://[a-z0-9][a-z0-9.-]+/.+\\.tar\\.gz$", var.nats_server_s3_uri))
    error_message = "nats_server_s3_uri must look like s3://bucket/key.tar.gz."
  }
}

variable "volume_size_gib" {
  description = "Size of each server's JetStream volume in GiB."
  type        = number
  default     = 50

  validation {
    condition     = var.volume_size_gib >= 8 && var.volume_size_gib <= 16384
    error_message = "volume_size_gib must be between 8 and 16384."
  }
}

variable "volume_type" {
  description = "EBS volume type of the JetStream volumes."
  type        = string
  default     = "gp3"

  validation {
    condition     = contains(["gp3", "io2"], var.volume_type)
    error_message = "volume_type must be gp3 or io2."
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

variable "instance_profile_name" {
  description = "Instance profile of the servers: it must allow s3:GetObject on nats_server_s3_uri (the iam module's instance_profile_names[\"nats\"] does)."
  type        = string
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
