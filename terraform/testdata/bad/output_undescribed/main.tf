output "endpoint" {
  value = "db:9042"
}
