package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// NOTE(skeleton): the resource issue replaces this file.

var _ resource.Resource = (*proxyVMResource)(nil)

type proxyVMResource struct{ data *providerData }

// NewProxyVMResource is the proxy_vm resource factory.
func NewProxyVMResource() resource.Resource { return &proxyVMResource{} }

func (r *proxyVMResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm"
}

func (r *proxyVMResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{Attributes: map[string]schema.Attribute{"id": schema.StringAttribute{Computed: true}}}
}

func (r *proxyVMResource) Create(context.Context, resource.CreateRequest, *resource.CreateResponse) {}
func (r *proxyVMResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse)       {}
func (r *proxyVMResource) Update(context.Context, resource.UpdateRequest, *resource.UpdateResponse) {}
func (r *proxyVMResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
