# A complete Sediment cluster on AWS: the bucket, a VPC (or yours), a NATS
# JetStream cluster of three, ingest nodes with their commitlog volumes,
# frontends behind a network load balancer on 9042, and compactors that
# scale on the compaction backlog.

provider "aws" {
  region = var.region

  default_tags {
    tags = merge(var.tags, { "sediment:cluster" = var.name })
  }
}

data "aws_ssm_parameter" "al2023" {
  count = var.ami_id == null ? 1 : 0
  name  = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-${var.architecture}"
}

locals {
  ami_id = var.ami_id != null ? var.ami_id : nonsensitive(data.aws_ssm_parameter.al2023[0].value)
  family = var.architecture == "arm64" ? "g" : "i"

  # Flags every Sediment role shares. The NATS URL comes from the servers'
  # network interfaces, so no instance of an Auto Scaling group starts
  # before the servers' addresses are reserved.
  flags = {
    "objectstore.backend"   = "s3"
    "objectstore.bucket"    = module.bucket.name
    "objectstore.region"    = var.region
    "objectstore.prefix"    = var.bucket_prefix
    "manifest.nats-url"     = module.nats.url
    "manifest.cluster-name" = var.name
    "log.format"            = "json"
  }
}

module "bucket" {
  source      = "../../modules/bucket"
  name        = var.bucket_name
  kms_key_arn = var.kms_key_arn
  tags        = var.tags
}

# The binaries live in the cluster's bucket, under releases/, named by
# their content: instances copy them with their instance role at boot
# (nothing expires, nothing comes from the internet), and a new build is
# a new key, so a new launch template version and an instance refresh.
locals {
  release_prefix = "${var.bucket_prefix == "" ? "" : "${var.bucket_prefix}/"}releases/"
  sediment_sha   = filesha256(var.sediment_binary_path)
}

resource "aws_s3_object" "sediment" {
  bucket      = module.bucket.name
  key         = "${local.release_prefix}sediment-${local.sediment_sha}"
  source      = var.sediment_binary_path
  source_hash = local.sediment_sha
  kms_key_id  = var.kms_key_arn
}

resource "aws_s3_object" "nats_server" {
  bucket      = module.bucket.name
  key         = "${local.release_prefix}nats-server-${filesha256(var.nats_server_archive_path)}.tar.gz"
  source      = var.nats_server_archive_path
  source_hash = filesha256(var.nats_server_archive_path)
  kms_key_id  = var.kms_key_arn
}

module "network" {
  source               = "../../modules/network"
  name                 = var.name
  vpc_id               = var.vpc_id
  private_subnet_ids   = var.private_subnet_ids
  public_subnet_ids    = var.public_subnet_ids
  cql_allowed_cidrs    = var.cql_allowed_cidrs
  cql_open_to_internet = var.cql_open_to_internet
  tags                 = var.tags
}

module "iam" {
  source      = "../../modules/iam"
  name        = var.name
  bucket_arn  = module.bucket.arn
  prefix      = var.bucket_prefix
  kms_key_arn = var.kms_key_arn
  tags        = var.tags
}

module "nats" {
  source                = "../../modules/nats"
  name                  = var.name
  subnets               = module.network.private_subnets
  security_group_id     = module.network.security_group_ids["nats"]
  ami_id                = local.ami_id
  instance_type         = "m7${local.family}.large"
  nats_server_s3_uri    = "s3://${aws_s3_object.nats_server.bucket}/${aws_s3_object.nats_server.key}"
  instance_profile_name = module.iam.instance_profile_names["nats"]
  kms_key_arn           = var.kms_key_arn
  tags                  = var.tags
}

module "ingest" {
  source                 = "../../modules/ingest"
  name                   = var.name
  node_count             = var.ingest_nodes
  subnets                = module.network.private_subnets
  security_group_id      = module.network.security_group_ids["ingest"]
  iam_role_name          = module.iam.role_names["ingest"]
  instance_profile_name  = module.iam.instance_profile_names["ingest"]
  ami_id                 = local.ami_id
  instance_type          = "m7${local.family}.xlarge"
  kms_key_arn            = var.kms_key_arn
  sediment_binary_s3_uri = "s3://${aws_s3_object.sediment.bucket}/${aws_s3_object.sediment.key}"
  sediment_binary_sha256 = local.sediment_sha
  flags                  = local.flags
  tags                   = var.tags
}

module "frontend" {
  source                 = "../../modules/frontend"
  name                   = var.name
  subnets                = module.network.private_subnets
  security_group_id      = module.network.security_group_ids["frontend"]
  lb_security_group_id   = module.network.security_group_ids["lb"]
  lb_subnet_ids          = var.cql_internet_facing ? module.network.public_subnet_ids : [for s in module.network.private_subnets : s.id]
  internal               = !var.cql_internet_facing
  instance_profile_name  = module.iam.instance_profile_names["frontend"]
  ami_id                 = local.ami_id
  instance_type          = "c7${local.family}.xlarge"
  min_size               = var.frontend_min
  max_size               = var.frontend_max
  kms_key_arn            = var.kms_key_arn
  sediment_binary_s3_uri = "s3://${aws_s3_object.sediment.bucket}/${aws_s3_object.sediment.key}"
  sediment_binary_sha256 = local.sediment_sha
  flags                  = local.flags
  tags                   = var.tags
}

module "compactor" {
  source                 = "../../modules/compactor"
  alarm_actions          = var.alarm_actions
  name                   = var.name
  subnets                = module.network.private_subnets
  security_group_id      = module.network.security_group_ids["compactor"]
  iam_role_name          = module.iam.role_names["compactor"]
  instance_profile_name  = module.iam.instance_profile_names["compactor"]
  ami_id                 = local.ami_id
  instance_type          = "m7${local.family}.xlarge"
  min_size               = var.compactor_min
  max_size               = var.compactor_max
  kms_key_arn            = var.kms_key_arn
  sediment_binary_s3_uri = "s3://${aws_s3_object.sediment.bucket}/${aws_s3_object.sediment.key}"
  sediment_binary_sha256 = local.sediment_sha
  flags                  = local.flags
  tags                   = var.tags
}
