#version 330 core
// vistest's lit mesh program (vistest/synth/render.py, docs/synth.md): pyrender's vertex layout (position at 0,
// then normal, texcoord_0 and the instance matrix at the locations pyrender's renderer defines), world-space
// position and normal out for the fragment program. Every primitive vistest draws has normals and texcoord_0.
layout(location = 0) in vec3 position;
layout(location = NORMAL_LOC) in vec3 normal;
layout(location = TEXCOORD_0_LOC) in vec2 texcoord_0;
layout(location = INST_M_LOC) in mat4 inst_m;

uniform mat4 M;
uniform mat4 V;
uniform mat4 P;

out vec3 frag_position;
out vec3 frag_normal;
out vec2 uv_0;

void main()
{
    mat4 model = M * inst_m;
    vec4 world = model * vec4(position, 1.0);
    gl_Position = P * V * world;
    frag_position = vec3(world);
    frag_normal = normalize(vec3(transpose(inverse(model)) * vec4(normal, 0.0)));
    uv_0 = texcoord_0;
}
