variable "name" {
  description = "A name."
  type        = string
}

output "name" {
  description = "The name."
  value       = var.name
}
