output "vpc_id" {
  description = "ID of the VPC."
  value       = local.vpc_id
}

output "vpc_cidr_block" {
  description = "CIDR block of the VPC."
  value       = local.vpc_cidr_block
}

output "private_subnets" {
  description = "Private subnets: id, availability_zone and cidr_block of each."
  value       = local.private_subnets
}

output "public_subnet_ids" {
  description = "Public subnets, for an internet-facing load balancer."
  value       = local.public_subnet_ids
}

output "security_group_ids" {
  description = "Security group of each role: lb, frontend, ingest, compactor and nats."
  value       = { for k, sg in aws_security_group.this : k => sg.id }
}
