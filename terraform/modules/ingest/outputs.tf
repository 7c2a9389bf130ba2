output "autoscaling_group_names" {
  description = "Auto Scaling group of each ingest node."
  value       = [for g in aws_autoscaling_group.node : g.name]
}

output "volume_ids" {
  description = "Commitlog volume of each ingest node."
  value       = [for v in aws_ebs_volume.commitlog : v.id]
}
