output "role_names" {
  description = "Name of the IAM role of each Sediment role: frontend, ingest and compactor."
  value       = { for k, r in aws_iam_role.this : k => r.name }
}

output "instance_profile_names" {
  description = "Name of the instance profile of each Sediment role (frontend, ingest and compactor) and of the NATS servers (nats)."
  value       = merge({ for k, p in aws_iam_instance_profile.this : k => p.name }, { nats = aws_iam_instance_profile.nats.name })
}
