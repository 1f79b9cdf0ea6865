// Package provider is the Terraform glue: schemas, models, plan modifiers, CRUD, import and
// data sources. It holds no HTTP and no Proxmox wording.
package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

var _ provider.Provider = (*proxyProvider)(nil)

type proxyProvider struct {
	version string
}

// New returns the provider factory.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &proxyProvider{version: version} }
}

func (p *proxyProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "proxy"
	resp.Version = p.version
}

func (p *proxyProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{}
}

func (p *proxyProvider) Configure(_ context.Context, _ provider.ConfigureRequest, _ *provider.ConfigureResponse) {
}

func (p *proxyProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewProxyVMResource}
}

func (p *proxyProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewHealthDataSource, NewVMsDataSource}
}
